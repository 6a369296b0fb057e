"""Full-text session search (``searchSessions``): the index against reading every file, and against
Pi 0.85.0's own picker search on the same files (ratio = ours / baseline).

Files: ``SESSIONS`` small generated sessions (``tests/store/search_corpus``: ~12 entries, phrases
planted) in one directory; with ``--full`` also ``HEAVY`` larger ones (``benchmarks.store``'s
generator, ~40 entries with 6 KB tool outputs) beside 20 small planted ones. Rows: the first query
(builds the index), a warm query for a planted phrase, one every session matches (one page of 20),
a regular expression, the refresh after one session grew; each beside the streaming search (every file read and parsed,
the fallback when SQLite has no FTS5) and, where the work is the same, Pi's
``SessionManager.list`` + ``filterAndSortSessions`` (Pi has no full-text index: its picker loads
every session's text, then matches). Memory: Python's peak allocation during one warm query
(tracemalloc) beside the streaming search's, and the index's size on disk beside the sessions'.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from benchmarks._harness import Measurement, median, times_ms
from benchmarks._pi_script import run_pi_script
from benchmarks.store import generate_session

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rpcd.store.search import parse_query, search_files, sessions_in  # noqa: E402
from rpcd.store.search_index import INDEX_DIR, SearchIndex  # noqa: E402
from tests.store.search_corpus import generate  # noqa: E402

SESSIONS, FULL_SESSIONS = 200, 1000
HEAVY, FULL_HEAVY = 0, 1000
RUNS = 5
CWD = "/work/project"


def _ms(fn: Callable[[], object], runs: int = RUNS) -> list[float]:
    return times_ms(fn, runs)


def _peak_kb(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


def _pi(directory: Path, queries: list[str], runs: int, home: Path) -> dict[str, object] | None:
    env = {"HOME": str(home), "PI_CODING_AGENT_DIR": str(home / "agent"), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
    request = {"dir": str(directory), "cwd": CWD, "queries": queries, "runs": runs}
    result: dict[str, object] | None = run_pi_script("search", "_search_pi.mjs", request, env)
    return result


def _corpus(root: Path, small: int, heavy: int) -> tuple[list[str], str, str]:
    directory = root / "sessions"
    corpus = generate(directory, small, seed=36, cwd=CWD)
    for n in range(heavy):
        generate_session(directory / f"heavy-{n:04d}.jsonl", 40, seed=n, cwd=CWD)
    planted = next(p.phrase for p in corpus.plants if " " not in p.phrase and not p.phrase.startswith("shared"))
    return sessions_in([str(directory)]), str(directory), planted


def _section(root: Path, small: int, heavy: int) -> list[Measurement]:
    files, directory, planted = _corpus(root, small, heavy)
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    label = f"{len(files)} sessions, {mb:.1f} MB"
    agent = root / "agent"
    queries = {"planted": planted, "every": "the", "regex": r"re:zq[0-9a-f]{6}\b"}
    parsed = {k: parse_query(v) for k, v in queries.items()}
    stream = {k: _ms(lambda q=q: search_files(files, q), 3) for k, q in parsed.items()}

    index = SearchIndex(str(agent))
    start = time.perf_counter()
    index.search(files, parsed["planted"], directories=[directory])
    build = (time.perf_counter() - start) * 1000
    warm = {k: _ms(lambda q=q: index.search(files, q, directories=[directory])) for k, q in parsed.items()}

    grown = max(files, key=os.path.getmtime)

    def grow_and_search() -> None:
        with open(grown, "a") as out:
            out.write(json.dumps({"type": "custom", "customType": "bench", "data": {}, "id": os.urandom(4).hex(),
                                  "parentId": None, "timestamp": "2030-01-01T00:00:00.000Z"}) + "\n")
        index.search(files, parsed["planted"], directories=[directory])

    refresh = _ms(grow_and_search)
    peak_index = _peak_kb(lambda: index.search(files, parsed["planted"], directories=[directory]))
    peak_stream = _peak_kb(lambda: search_files(files, parsed["planted"]))
    index.close()
    index_mb = sum(p.stat().st_size for p in (agent / INDEX_DIR).iterdir()) / 1e6
    pi = _pi(Path(directory), [queries["planted"]], RUNS, root)
    pi_ms = median(pi[queries["planted"]]) if pi is not None else None  # type: ignore[arg-type]

    return [
        Measurement(f"first query: builds the index [{label}]", build, "ms",
                    "streaming search, same query", median(stream["planted"])),
        Measurement(f"planted phrase, warm index [{label}]", median(warm["planted"]), "ms",
                    "Pi 0.85.0's picker search (list + filter), same files" if pi_ms else "streaming search",
                    pi_ms if pi_ms else median(stream["planted"]),
                    note=f"streaming search: {median(stream['planted']):.0f} ms"),
        Measurement(f"a word every session holds, first page of 20 [{label}]", median(warm["every"]), "ms",
                    "streaming search", median(stream["every"])),
        Measurement(f"regular expression (no index filter: one pass over the stored text) [{label}]",
                    median(warm["regex"]), "ms", "streaming search", median(stream["regex"])),
        Measurement(f"one session grew by a line, then a query [{label}]", median(refresh), "ms",
                    "the same query, nothing changed", median(warm["planted"])),
        Measurement(f"peak Python memory of a warm query [{label}]", peak_index, "KB",
                    "streaming search", peak_stream),
        Measurement(f"index on disk [{label}]", index_mb, "MB", "the session files", mb),
    ]


def run(full: bool) -> list[Measurement]:
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-search-") as tmp:
        rows = _section(Path(tmp) / "small", FULL_SESSIONS if full else SESSIONS, 0)
        if full:
            rows += _section(Path(tmp) / "heavy", 20, FULL_HEAVY)  # 20 planted sessions among them
        return rows
