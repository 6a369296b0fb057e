"""``--continue``'s lookup (``find_most_recent_session``) answers from the facts cache
(``rpcd.store.recency``) and must always pick the session the listing shows first: checked after random
appends (whole lines and torn ones), completions of torn lines, same-size and other rewrites,
truncations, deletions, new files, files that are not sessions, mtimes set back, with the cache
trusted at once (``RACY_NS`` 0) and as shipped; a broken cache file is ignored and written anew;
an unchanged file is not read again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.store import recency
from rpcd.store.listing import list_sessions
from rpcd.store.recency import find_most_recent_session

CWD = "/tmp/recency-project"
NAMES = [f"s{n}.jsonl" for n in range(4)]


def _header(session: str) -> str:
    return json.dumps({"type": "session", "version": 3, "id": session, "timestamp": "2026-01-01T00:00:00.000Z",
                       "cwd": CWD})


def _message(n: int, role: str, stamp: int) -> str:
    return json.dumps({"type": "message", "id": f"{n:08x}", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
                       "message": {"role": role, "content": [{"type": "text", "text": f"m{n}"}], "timestamp": stamp}})


def _truth(directory: Path) -> str | None:
    listed = list_sessions(CWD, str(directory))
    return listed[0].path if listed else None


op = st.tuples(
    st.sampled_from(["append", "torn", "complete", "rewrite", "same_size", "truncate", "delete", "create", "junk",
                     "backdate"]),
    st.sampled_from(NAMES),
    st.integers(1_700_000_000_000, 1_800_000_000_000),
)


def _apply(directory: Path, kind: str, name: str, stamp: int, counter: list[int]) -> None:
    path = directory / name
    counter[0] += 1
    n = counter[0]
    exists = path.exists()
    if kind == "create" or (not exists and kind in ("append", "torn", "rewrite", "same_size")):
        path.write_text(_header(name) + "\n" + _message(n, "user", stamp) + "\n")
    elif kind == "append":
        with open(path, "a") as handle:
            handle.write(_message(n, "assistant", stamp) + "\n")
    elif kind == "torn" and exists:
        with open(path, "a") as handle:
            handle.write(_message(n, "user", stamp)[:-7])
    elif kind == "complete" and exists:
        text = path.read_text()
        if not text.endswith("\n"):
            last = text.rsplit("\n", 1)[-1]  # the torn line, written again whole
            path.write_text(text[: len(text) - len(last)] + _message(n, "user", stamp) + "\n")
    elif kind == "rewrite" and exists:
        path.write_text(_header(name) + "\n" + _message(n, "assistant", stamp) + "\n")
    elif kind == "same_size" and exists:
        data = path.read_bytes()
        swapped = data.replace(b"1", b"2", 1) if b"1" in data else data
        path.write_bytes(swapped)
    elif kind == "truncate" and exists:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "delete" and exists:
        path.unlink()
    elif kind == "junk":
        path.write_text("not a session\n")
    elif kind == "backdate" and exists:
        os.utime(path, (1_600_000_000 + n, 1_600_000_000 + n))


@pytest.mark.parametrize("racy_ns", [0, recency.RACY_NS])
@given(st.lists(op, min_size=1, max_size=25))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_lookup_always_picks_what_the_listing_shows_first(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, racy_ns: int,
        ops: list[tuple[str, str, int]]) -> None:
    monkeypatch.setattr(recency, "RACY_NS", racy_ns)
    root = tmp_path_factory.mktemp("recency")
    directory, agent = root / "sessions", root / "agent"
    directory.mkdir()
    counter = [0]
    for kind, name, stamp in ops:
        _apply(directory, kind, name, stamp, counter)
        expected = _truth(directory)
        for _ in range(2):  # the second lookup answers from what the first cached
            assert find_most_recent_session(CWD, str(directory), agent_dir=str(agent)) == expected, (kind, name)


def _project(tmp_path: Path, count: int = 5) -> tuple[Path, Path]:
    directory, agent = tmp_path / "sessions", tmp_path / "agent"
    directory.mkdir()
    for n in range(count):
        path = directory / f"s{n}.jsonl"
        path.write_text(_header(f"s{n}") + "\n" + _message(n, "user", 1_700_000_000_000 + n) + "\n")
        os.utime(path, (1_600_000_000, 1_600_000_000))  # long ago: the cache trusts it at once
    return directory, agent


def test_an_unchanged_file_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory, agent = _project(tmp_path)
    assert find_most_recent_session(CWD, str(directory), agent_dir=str(agent)) == str(directory / "s4.jsonl")
    cache = agent / recency.CACHE_DIR / recency.CACHE_FILE  # it holds first messages: private, as the sessions
    assert oct(cache.stat().st_mode & 0o777) == "0o600" and oct(cache.parent.stat().st_mode & 0o777) == "0o700"
    opened: list[Any] = []
    real = recency.open_regular
    monkeypatch.setattr(recency, "open_regular", lambda path: opened.append(path) or real(path))
    assert find_most_recent_session(CWD, str(directory), agent_dir=str(agent)) == str(directory / "s4.jsonl")
    assert opened == []
    with open(directory / "s1.jsonl", "a") as handle:  # grown: only its new line is read
        handle.write(_message(9, "assistant", 1_800_000_000_000) + "\n")
    assert find_most_recent_session(CWD, str(directory), agent_dir=str(agent)) == str(directory / "s1.jsonl")
    assert opened == [str(directory / "s1.jsonl")]


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"version": 99, "files": {}}', b'{"version": 1, "files": 3}',
                                     b'{"version": 1, "files": {"/x": [1, 2]}}'])
def test_a_broken_cache_is_ignored_and_written_anew(tmp_path: Path, content: bytes) -> None:
    directory, agent = _project(tmp_path)
    cache = agent / recency.CACHE_DIR / recency.CACHE_FILE
    cache.parent.mkdir(parents=True)
    cache.write_bytes(content)
    assert find_most_recent_session(CWD, str(directory), agent_dir=str(agent)) == str(directory / "s4.jsonl")
    data = json.loads(cache.read_bytes())
    assert data["version"] == recency.VERSION and len(data["files"]) == 5


def test_files_gone_from_the_directory_leave_the_cache(tmp_path: Path) -> None:
    directory, agent = _project(tmp_path)
    find_most_recent_session(CWD, str(directory), agent_dir=str(agent))
    (directory / "s4.jsonl").unlink()
    assert find_most_recent_session(CWD, str(directory), agent_dir=str(agent)) == str(directory / "s3.jsonl")
    files = json.loads((agent / recency.CACHE_DIR / recency.CACHE_FILE).read_bytes())["files"]
    assert sorted(os.path.basename(p) for p in files) == [f"s{n}.jsonl" for n in range(4)]
