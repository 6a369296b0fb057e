"""Stored sessions through the daemon: ``searchSessions`` over generated sessions of several projects
(every planted phrase found with its entries, nothing invented, pages that neither repeat nor skip),
``readSession`` of a stored session by file or id prefix without switching to it, ``resume`` and
``deleteSession`` by a unique id prefix (an ambiguous one refused, naming the candidates), and
``exportMarkdown``. 120 sessions by default; ``RPCD_LONG=1``: 1,000."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rpcd.store.paths import encode_cwd
from tests.driver import Daemon, RpcFailure
from tests.store.search_corpus import Corpus, generate

SESSIONS = 1000 if os.environ.get("RPCD_LONG") == "1" else 120


def corpus_in(agent: Path, count: int, seed: int, cwd: str) -> Corpus:
    return generate(agent / "sessions" / encode_cwd(cwd), count, seed=seed, cwd=cwd)


def all_pages(d: Daemon, query: str, **extra: object) -> list[dict[str, object]]:
    results, cursor = [], None
    while True:
        params: dict[str, object] = {"query": query, "limit": 25, **extra}
        if cursor is not None:
            params["cursor"] = cursor
        page = d.call("searchSessions", params)
        results.extend(page["results"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return results


def test_search_finds_every_planted_phrase_across_projects_and_invents_nothing(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    home = tmp_path / "home"
    home.mkdir()
    one = corpus_in(agent, SESSIONS // 2, 1, "/work/alpha")
    two = corpus_in(agent, SESSIONS - SESSIONS // 2, 2, "/work/beta")
    with Daemon("--agent-dir", str(agent), "--cwd", str(home)) as d:
        d.initialize()
        for corpus in (one, two):
            for phrase, planted in corpus.by_phrase().items():
                results = all_pages(d, corpus.query(phrase))
                assert {r["sessionFile"] for r in results} >= {p.session_file for p in planted}, phrase
                for result in results:
                    wanted = {p.entry_id for p in planted if p.session_file == result["sessionFile"]}
                    assert wanted <= {s.get("entryId") for s in result["snippets"]}, phrase
        everyone = {**one.by_phrase(), **two.by_phrase()}
        for phrase in list(everyone)[:15]:
            found = {r["sessionFile"] for r in all_pages(d, one.query(phrase))}
            planted = {p.session_file for c in (one, two) for p in c.plants if p.phrase == phrase}
            assert found == planted, phrase  # nothing invented, in either project
        assert all_pages(d, "zq0000000000") == []
        only_beta = all_pages(d, "the", cwd="/work/beta")
        assert only_beta and {r["cwd"] for r in only_beta} == {"/work/beta"}
        paged = all_pages(d, "the")
        assert len(paged) == SESSIONS and len({r["sessionFile"] for r in paged}) == SESSIONS
        stamps = [r["updatedAt"] for r in paged]
        assert stamps == sorted(stamps, reverse=True)
        with pytest.raises(RpcFailure) as bad:
            d.call("searchSessions", {"query": "re:(broken"})
        assert bad.value.code == -32602 and bad.value.data["errors"][0]["path"] == "$.query"


def test_a_stored_session_is_read_resumed_and_deleted_by_id_prefix(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    project = tmp_path / "project"
    project.mkdir()
    corpus = corpus_in(agent, 3, 7, str(project))
    headers = [json.loads(Path(f).read_text().splitlines()[0]) for f in corpus.files]
    target, other = headers[0], headers[1]
    prefix = next(target["id"][:n] for n in range(8, 36) if not other["id"].startswith(target["id"][:n])
                  and not headers[2]["id"].startswith(target["id"][:n]))
    with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as d:
        d.initialize()
        read = d.call("readSession", {"sessionId": prefix, "limit": 5})
        assert read["sessionFile"] == corpus.files[0] and read["header"]["id"] == target["id"]
        assert len(read["entries"]) == 5 and read["nextSince"] == read["entries"][-1]["id"]
        rest = d.call("readSession", {"sessionFile": corpus.files[0], "since": read["nextSince"]})
        lines = Path(corpus.files[0]).read_text().splitlines()
        assert [e["id"] for e in read["entries"] + rest["entries"]] == [json.loads(line)["id"] for line in lines[1:]]
        assert rest["leafId"] == json.loads(lines[-1])["id"] and "nextSince" not in rest
        assert d.call("getState")["sessionFile"] != corpus.files[0]  # read, not switched to

        with pytest.raises(RpcFailure) as ambiguous:
            d.call("resume", {"sessionPath": target["id"][:4]})
        assert "ambiguous" in ambiguous.value.message and target["id"] in ambiguous.value.message
        resumed = d.call("resume", {"sessionPath": prefix})
        assert resumed["sessionFile"] == corpus.files[0]
        removed = d.call("deleteSession", {"sessionFile": other["id"]})
        assert removed["method"] in ("trash", "unlink") and not Path(corpus.files[1]).exists()
        with pytest.raises(RpcFailure) as missing:
            d.call("readSession", {"sessionId": "ffffffff-no-such"})
        assert missing.value.code == -32030

        markdown = d.call("exportMarkdown", {"inline": True})["markdown"]
        assert markdown.startswith("# ") and "🔧 bash:" in markdown and "<details>" in markdown
        written = d.call("exportMarkdown", {})["path"]
        assert written.endswith(".md") and Path(written).read_text() == markdown.replace(
            markdown.split("\n- **Exported:** ")[1].split("\n")[0], Path(written).read_text().split(
                "\n- **Exported:** ")[1].split("\n")[0])


def test_the_daemon_starts_on_a_session_named_by_id_prefix(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    project = tmp_path / "project"
    project.mkdir()
    corpus = corpus_in(agent, 2, 8, str(project))
    header = json.loads(Path(corpus.files[1]).read_text().splitlines()[0])
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), "--session", header["id"][:23]) as d:
        d.initialize()
        assert d.call("getState")["sessionFile"] == corpus.files[1]
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), "--session", "fffff-no-such") as d:
        d.initialize()
        with pytest.raises(RpcFailure) as failed:
            d.call("getMessages")
        assert failed.value.code == -32020
        assert failed.value.data["errors"][0]["type"] == "SessionFileNotFound"
