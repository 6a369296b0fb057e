"""Full-text search over the session files real Pi wrote (``tests/fixtures/pi-0.85.0`` and
``pi-0.73.1``: linear, branched, forks, labels, compaction, a kitchen sink, hand-made edge cases,
and the original version-1 file with no entry ids, as Pi's migration reads it).

Every word Pi's own session picker would search in a file (``buildSessionInfo``: the session id,
its name, the text of user and assistant messages, the cwd) finds that file, through the index and
the streaming search alike; a hit's file holds the word (nothing invented); a file Pi does not
list (no header line first) is never a hit; an entry's snippet names the entry that holds it."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rpcd.store.listing import recency_key
from rpcd.store.search import SearchPage, SearchQuery, parse_query, search_files, sessions_in
from rpcd.store.search_index import SearchIndex

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WORD = re.compile(r"[^\W_]{4,}")


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every Pi-written fixture file flat in one directory (the legacy original under a ``.jsonl`` name)."""
    directory = tmp_path_factory.mktemp("pi-sessions")
    for version in ("pi-0.85.0", "pi-0.73.1"):
        for source in sorted((FIXTURES / version / "sessions").rglob("*.jsonl")):
            shutil.copyfile(source, directory / f"{version}-{source.parent.name}-{source.name}")
        for source in sorted((FIXTURES / version / "sessions").rglob("*.original.jsonl.txt")):
            shutil.copyfile(source, directory / f"{version}-{source.name.removesuffix('.txt')}")
    return directory


def _lines(path: Path) -> Iterator[Mapping[str, Any]]:
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def pi_picker_text(path: Path) -> tuple[str, list[tuple[str | None, str]]] | None:
    """What Pi 0.85.0's picker searches in ``path`` (``buildSessionInfo`` + ``getSessionSearchText``),
    and the messages' texts with their entry ids; ``None`` when Pi does not list the file."""
    header: Mapping[str, Any] | None = None
    name = ""
    texts: list[tuple[str | None, str]] = []
    for entry in _lines(path):
        if header is None:
            if entry.get("type") != "session":
                return None
            header = entry
            continue
        if entry.get("type") == "session_info":
            name = str(entry.get("name") or "").strip()
        message = entry.get("message")
        if entry.get("type") != "message" or not isinstance(message, dict) \
                or message.get("role") not in ("user", "assistant") or "content" not in message:
            continue
        content = message["content"]
        text = content if isinstance(content, str) else " ".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
        if text:
            texts.append((entry.get("id") if isinstance(entry.get("id"), str) else None, text))
    if header is None:
        return None
    cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else ""
    return f"{header.get('id')} {name} {' '.join(t for _, t in texts)} {cwd}", texts


def _every_hit(page_of: Any, query: SearchQuery) -> list[Any]:
    hits: list[Any] = []
    after = None
    while True:
        page: SearchPage = page_of(query, after)
        hits.extend(page.hits)
        if not page.more:
            return hits
        after = recency_key(page.hits[-1].info)


def test_every_word_pis_picker_searches_finds_its_file_and_nothing_is_invented(sessions: Path, tmp_path: Path) -> None:
    files = sessions_in([str(sessions)])
    assert len(files) >= 20
    picker = {f: pi_picker_text(Path(f)) for f in files}
    listed = {f for f, text in picker.items() if text is not None}
    assert len(listed) < len(files)  # the edge cases Pi does not list are among them
    words: dict[str, set[str]] = {}
    for f, found in picker.items():
        if found is not None:
            for word in WORD.findall(found[0].lower()):
                words.setdefault(word, set()).add(f)
    assert len(words) > 50
    raw = {f: Path(f).read_text(encoding="utf-8", errors="replace").lower() for f in files}
    index = SearchIndex(str(tmp_path / "agent"))
    try:
        for n, (word, wanted) in enumerate(sorted(words.items())):
            query = parse_query(word)
            by_index = _every_hit(lambda q, a: index.search(files, q, directories=[str(sessions)], after=a), query)
            found = {h.info.path for h in by_index}
            if n % 8 == 0:  # the streaming search reads every file: every 8th word is enough to agree
                assert found == {h.info.path for h in _every_hit(lambda q, a: search_files(files, q, after=a), query)}
            assert wanted <= found, (word, wanted - found)  # nothing Pi's picker finds is missed
            assert found <= listed, word  # a file Pi does not list is not a session
            assert all(word in raw[f] for f in found), word  # nothing invented
    finally:
        index.close()


def test_a_snippet_names_the_entry_its_text_is_in(sessions: Path) -> None:
    checked = 0
    for f in sessions_in([str(sessions)]):
        found = pi_picker_text(Path(f))
        if found is None:
            continue
        for entry_id, text in found[1]:
            words = WORD.findall(text.lower())
            if not words:
                continue
            longest = max(words, key=len)
            [hit] = search_files([f], parse_query(longest), max_snippets=1000).hits
            assert entry_id in {s.entry_id for s in hit.snippets}, (f, longest)
            checked += 1
    assert checked > 20
