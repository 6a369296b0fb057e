"""Listing and "most recent": one order (``recency_key``) for the listing and ``--continue``; search terms."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rpcd.store import SessionManager
from rpcd.store.listing import (
    build_session_info,
    list_all_sessions,
    list_sessions,
    parse_query,
    session_matches,
)
from rpcd.store.recency import find_most_recent_session

CWD = "/work/project"


def write(directory: Path, n: int, *, created_ms: int, activity_ms: int | None, mtime: float, cwd: str = CWD,
          text: str = "hello", name: str | None = None) -> Path:
    path = directory / f"s{n:03}.jsonl"
    created = _iso(created_ms)
    lines = [{"type": "session", "version": 3, "id": f"id-{n}", "timestamp": created, "cwd": cwd}]
    if activity_ms is not None:
        lines.append({"type": "message", "id": f"m{n}", "parentId": None, "timestamp": created,
                      "message": {"role": "user", "content": text, "timestamp": activity_ms}})
    if name is not None:
        lines.append({"type": "session_info", "id": f"n{n}", "parentId": None, "timestamp": created, "name": name})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    os.utime(path, (mtime, mtime))
    return path


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


sessions_strategy = st.lists(
    st.tuples(
        st.integers(1_600_000_000_000, 1_700_000_000_000),  # created
        st.one_of(st.none(), st.integers(1_600_000_000_000, 1_700_000_000_000)),  # last activity
        st.floats(1_500_000_000, 1_800_000_000),  # mtime: must not matter
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(sessions_strategy)
def test_continue_picks_the_session_the_listing_shows_first(specs: list[tuple[int, int | None, float]]) -> None:
    with tempfile.TemporaryDirectory() as raw:
        directory = Path(raw)
        for n, (created, activity, mtime) in enumerate(specs):
            write(directory, n, created_ms=created, activity_ms=activity, mtime=mtime)
        listed = list_sessions(CWD, str(directory))
        assert find_most_recent_session(CWD, str(directory), custom_dir=True) == listed[0].path
        # newest activity first (the header's time when there is no message), ties by path
        expected = sorted(
            ((a if a is not None else c), str(directory / f"s{n:03}.jsonl")) for n, (c, a, _) in enumerate(specs)
        )
        assert [info.path for info in listed] == [path for _, path in reversed(expected)]
        by_creation = list_sessions(CWD, str(directory), sort="created")
        assert [info.path for info in by_creation] == [
            path for _, path in sorted(((c, str(directory / f"s{n:03}.jsonl")) for n, (c, _, _) in enumerate(specs)),
                                       reverse=True)
        ]
        assert SessionManager.continue_recent(CWD, str(directory)).get_session_file() == listed[0].path


def test_a_custom_directory_lists_and_continues_only_the_cwds_sessions(tmp_path: Path) -> None:
    write(tmp_path, 1, created_ms=1_600_000_000_000, activity_ms=1_650_000_000_000, mtime=1)
    other = write(tmp_path, 2, created_ms=1_600_000_000_000, activity_ms=1_690_000_000_000, mtime=2, cwd="/other")
    assert [i.cwd for i in list_sessions(CWD, str(tmp_path))] == [CWD]
    assert find_most_recent_session(CWD, str(tmp_path), custom_dir=True) == str(tmp_path / "s001.jsonl")
    assert [i.path for i in list_all_sessions(str(tmp_path))] == [str(other), str(tmp_path / "s001.jsonl")]


def test_list_all_walks_every_project_directory_of_the_agent_dir(tmp_path: Path) -> None:
    for n, project in enumerate(("--a--", "--b--")):
        folder = tmp_path / "sessions" / project
        folder.mkdir(parents=True)
        write(folder, n, created_ms=1_600_000_000_000 + n, activity_ms=None, mtime=1, cwd=f"/{project}")
    (tmp_path / "sessions" / "stray.jsonl").write_text("{}\n")  # not in a project directory: not a listing's
    listed = list_all_sessions(agent_dir=str(tmp_path))
    assert [i.cwd for i in listed] == ["/--b--", "/--a--"]


def test_search_terms_words_phrases_and_unbalanced_quotes() -> None:
    assert parse_query('  Fix  "auth  Module" bug ') == ["fix", "auth module", "bug"]
    assert parse_query('say "hi') == ["say", '"hi']
    assert parse_query("") == [] and parse_query(' "" ') == []


def test_search_matches_the_name_the_first_message_and_the_cwd(tmp_path: Path) -> None:
    named = build_session_info(str(write(tmp_path, 1, created_ms=1, activity_ms=2, mtime=1, text="Deploy the API",
                                         name="Release train")))
    plain = build_session_info(str(write(tmp_path, 2, created_ms=1, activity_ms=2, mtime=1, text="fix  the\nbuild",
                                         cwd="/home/u/frontend")))
    assert named is not None and plain is not None
    for query, hits in [
        ("release", {1}), ("deploy api", {1}), ("TRAIN", {1}), ("frontend", {2}), ('"fix the build"', {2}),
        ("the", {1, 2}), ("release frontend", set()), ("project", {1}), ("", {1, 2}), ("nothing", set()),
    ]:
        matched = {n for n, info in ((1, named), (2, plain)) if session_matches(info, parse_query(query))}
        assert matched == hits, query
