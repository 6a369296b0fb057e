"""Full-text search of session files: the query syntax, the matching rules, the index against the
streaming search, and the index kept current as files grow, change and go.

The corpus (``search_corpus``) plants random phrases in random places of generated sessions;
each phrase must find exactly the sessions (and entries) it was planted in — nothing missed,
nothing invented — through the index and through the streaming search alike.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from rpcd.store.listing import recency_key
from rpcd.store.search import QueryError, SearchQuery, Token, parse_query, read_session_text, search_files
from rpcd.store.search_index import INDEX_DIR, INDEX_FILE, SearchIndex, forget_session, search_sessions
from tests.store.search_corpus import Corpus, generate

SESSIONS = int(os.environ.get("RPCD_SEARCH_SESSIONS", "1000" if os.environ.get("RPCD_LONG") == "1" else "120"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return generate(tmp_path_factory.mktemp("sessions"), SESSIONS, seed=36)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("agent")


def _all(page_fn, query: SearchQuery) -> list:  # type: ignore[no-untyped-def]
    """Every hit, page by page (20 at a time), following the recency cursor."""
    hits = []
    after = None
    while True:
        page = page_fn(query, after)
        hits.extend(page.hits)
        if not page.more:
            return hits
        after = recency_key(page.hits[-1].info)


# -- the query syntax (Pi's parseSearchQuery) ---------------------------------------------------


@pytest.mark.parametrize(("query", "tokens"), [
    ("", []),
    ("   ", []),
    ("foo bar", [("word", "foo"), ("word", "bar")]),
    ('foo "node cve" bar', [("word", "foo"), ("phrase", "node cve"), ("word", "bar")]),
    ('a"b c"d', [("word", "a"), ("phrase", "b c"), ("word", "d")]),
    ('"unclosed phrase', [("word", '"unclosed'), ("word", "phrase")]),
    ('""  x', [("word", "x")]),
    ('"  spaced   out  "', [("phrase", "spaced   out")]),
])
def test_query_tokens_follow_pis_picker(query: str, tokens: list[tuple[str, str]]) -> None:
    assert [(t.kind, t.value) for t in parse_query(query).tokens] == tokens


def test_a_regex_query_is_case_insensitive_and_an_empty_or_broken_one_is_refused() -> None:
    parsed = parse_query("  re:Fo+\\d ")
    assert parsed.regex is not None and parsed.regex.search("xFOOO7") and not parsed.tokens
    with pytest.raises(QueryError, match="Empty regex"):
        parse_query("re:   ")
    with pytest.raises(QueryError, match="Invalid regex"):
        parse_query("re:(unclosed")


def test_a_phrase_folds_case_and_whitespace_and_a_word_must_occur_as_written(tmp_path: Path) -> None:
    corpus = generate(tmp_path, 1, seed=5, plants_per_session=0)
    path = corpus.files[0]
    lines = Path(path).read_text().splitlines()
    entry = json.loads(lines[3])
    entry["message"]["content"][0]["text"] = "The Quick\n\t  BROWN fox jumped"
    lines[3] = json.dumps(entry)
    Path(path).write_text("\n".join(lines) + "\n")
    session = read_session_text(path)
    assert session is not None
    found = search_files([path], parse_query('"quick brown fox"'))
    assert [s.entry_id for s in found.hits[0].snippets] == [entry["id"]]
    assert "Quick BROWN fox" in found.hits[0].snippets[0].text
    assert not search_files([path], parse_query("qbf")).hits  # Pi's fuzzy subsequence would match this
    assert not search_files([path], parse_query('"quick fox"')).hits
    assert search_files([path], parse_query("QUICK jumped")).hits  # every word, anywhere, any case
    assert not search_files([path], parse_query("quick zzzz")).hits  # every word must match


def test_snippets_mark_the_hit_and_are_cut_around_it(tmp_path: Path) -> None:
    corpus = generate(tmp_path, 1, seed=6, plants_per_session=1)
    plant = corpus.plants[0]
    hit = search_files(corpus.files, parse_query(corpus.query(plant.phrase))).hits[0]
    snippet = next(s for s in hit.snippets if s.entry_id == plant.entry_id)
    assert " ".join(snippet.text[snippet.start:snippet.end].lower().split()) == plant.phrase
    assert len(snippet.text) <= len(plant.phrase) + 2 * 60 + 2 + 10


# -- planted phrases: all found, none invented ---------------------------------------------------


def _check_plants(corpus: Corpus, search) -> None:  # type: ignore[no-untyped-def]
    for phrase, planted in corpus.by_phrase().items():
        hits = _all(search, parse_query(corpus.query(phrase)))
        assert {h.info.path for h in hits} == {p.session_file for p in planted}, phrase
        for hit in hits:
            wanted = {p.entry_id for p in planted if p.session_file == hit.info.path}
            assert wanted <= {s.entry_id for s in hit.snippets}, phrase
            assert hit.match_count >= len(wanted)
    assert not _all(search, parse_query("zq0000000000"))
    assert not _all(search, parse_query('"zq parser"'))  # words that occur, never in this order


def test_every_planted_phrase_is_found_by_the_index_and_nothing_else(corpus: Corpus, index_dir: Path) -> None:
    index = SearchIndex(str(index_dir))
    directory = [os.path.dirname(corpus.files[0])]
    _check_plants(corpus, lambda q, after: index.search(corpus.files, q, directories=directory, after=after))
    index.close()


def test_the_streaming_search_answers_what_the_index_answers(corpus: Corpus, index_dir: Path) -> None:
    files = corpus.files[:40]
    index = SearchIndex(str(index_dir))
    queries = ["build parser", '"fails on"', "re:zq[0-9a-f]{4}", "to", "re:^the", *list(corpus.by_phrase())[:10]]
    for text in queries:
        query = parse_query(text)

        def key(hits: list) -> list:  # type: ignore[type-arg]
            return [(h.info.path, h.match_count, [(s.entry_id, s.kind, s.text) for s in h.snippets]) for h in hits]

        assert key(_all(lambda q, a: index.search(files, q, after=a), query)) == \
            key(_all(lambda q, a: search_files(files, q, after=a), query)), text
    index.close()


def test_session_name_id_and_cwd_are_searched_like_pis_picker(tmp_path: Path) -> None:
    corpus = generate(tmp_path / "s", 3, seed=8, cwd="/home/me/projects/frobnicator", plants_per_session=0)
    session = read_session_text(corpus.files[1])
    assert session is not None
    index = SearchIndex(str(tmp_path / "agent"))
    assert {h.info.path for h in index.search(corpus.files, parse_query("frobnicator")).hits} == set(corpus.files)
    by_id = index.search(corpus.files, parse_query(session.info.id[:13])).hits
    assert [h.info.path for h in by_id] == [corpus.files[1]] and by_id[0].snippets[0].entry_id is None
    index.close()


# -- keeping the index current ----------------------------------------------------------------------


def _append(path: str, text: str, parent: str, entry_id: str) -> None:
    line = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2030-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1893456000000}}
    with open(path, "a") as out:
        out.write(json.dumps(line) + "\n")


def _rows(index_path: Path, path: str) -> int:
    with sqlite3.connect(index_path) as db:
        return int(db.execute("SELECT count(*) FROM unit JOIN file ON file.id = unit.file WHERE file.path = ?",
                              (path,)).fetchone()[0])


def test_the_index_follows_appends_rewrites_and_deletions(tmp_path: Path) -> None:
    corpus = generate(tmp_path / "s", 4, seed=9, plants_per_session=0)
    agent = tmp_path / "agent"
    index = SearchIndex(str(agent))
    db_path = agent / INDEX_DIR / INDEX_FILE
    target = corpus.files[2]
    assert not index.search(corpus.files, parse_query("appendedphrase")).hits
    rows = _rows(db_path, target)
    assert oct(db_path.stat().st_mode & 0o777) == "0o600"  # it holds transcript text
    assert oct(db_path.parent.stat().st_mode & 0o777) == "0o700"
    last = json.loads(Path(target).read_text().splitlines()[-1])["id"]
    _append(target, "an appendedphrase arrives", last, "aaaa0001")
    hits = index.search(corpus.files, parse_query("appendedphrase")).hits
    assert [h.info.path for h in hits] == [target] and hits[0].snippets[0].entry_id == "aaaa0001"
    assert _rows(db_path, target) == rows + 1  # only the new line was indexed: nothing twice
    # A torn append (half a line) is not indexed; once complete, it is.
    with open(target, "a") as out:
        out.write('{"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2030-01-01T00:00:01.000Z",'
                  '"message":{"role":"user","content":[{"type":"text","text":"tornphrase')
    assert not index.search(corpus.files, parse_query("tornphrase")).hits
    with open(target, "a") as out:
        out.write(' done"}],"timestamp":1893456001000}}\n')
    assert [h.info.path for h in index.search(corpus.files, parse_query("tornphrase")).hits] == [target]
    assert _rows(db_path, target) == rows + 2
    # Rewritten in place (same size or not): indexed again from scratch, the old text gone.
    data = Path(target).read_bytes().replace(b"appendedphrase", b"rewrittenword!")
    Path(target).write_bytes(data)
    assert not index.search(corpus.files, parse_query("appendedphrase")).hits
    assert [h.info.path for h in index.search(corpus.files, parse_query("rewrittenword")).hits] == [target]
    # Gone from its directory: dropped; forgotten at once when the library deletes it.
    os.unlink(corpus.files[0])
    remaining = corpus.files[1:]
    index.search(remaining, parse_query("x"), directories=[str(tmp_path / "s")])
    assert _rows(db_path, corpus.files[0]) == 0
    index.close()
    forget_session(str(agent), target)
    assert _rows(db_path, target) == 0


def test_a_fifo_or_device_among_the_sessions_never_hangs_the_search(tmp_path: Path) -> None:
    corpus = generate(tmp_path / "s", 2, seed=10, plants_per_session=0)
    fifo = tmp_path / "s" / "fifo.jsonl"
    os.mkfifo(fifo)
    files = [*corpus.files, str(fifo), "/dev/zero"]
    assert len(search_files(files, parse_query("the")).hits) == 2
    page = search_sessions(files, parse_query("the"), agent_dir=str(tmp_path / "agent"))
    assert len(page.hits) == 2


def test_a_corrupt_index_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    corpus = generate(tmp_path / "s", 2, seed=11, plants_per_session=1)
    agent = tmp_path / "agent"
    db_path = agent / INDEX_DIR / INDEX_FILE
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not a database" * 100)
    phrase = corpus.plants[0].phrase
    page = search_sessions(corpus.files, parse_query(corpus.query(phrase)), agent_dir=str(agent))
    assert [h.info.path for h in page.hits] == [corpus.plants[0].session_file]
    assert (db_path.parent / f"{INDEX_FILE}.broken").exists()
    assert oct(db_path.stat().st_mode & 0o777) == "0o600"


def test_tokens_are_what_the_index_can_filter_on() -> None:
    from rpcd.store.search_index import _needles

    query = SearchQuery(tokens=(Token("word", "ab"), Token("word", "école_x"), Token("word", "éé"),
                                Token("phrase", "Two  Words")))
    assert _needles(query) == (["cole_x", "two words"], ["ab"])
