"""The session library beside Pi 0.85.0's own code, on the same files in the same run (ratio = ours / Pi).

Files: ``SESSIONS`` Pi-shaped sessions of one project in one directory (``benchmarks.store``'s
generator, each with its own seed and size), and one large session for the exports.
Rows: the project's listing (``SessionManager.list``), the ``--continue`` lookup (ours reads every
file to pick the session the listing shows first; Pi's ``findMostRecentSession`` reads headers and
takes the newest mtime — the cost of one definition of "most recent"), a search over the listing,
``exportHtml`` (open + render + write; Pi: ``exportFromFile``, its template with the session as
base64 JSON) and ``exportJsonl`` (open + the branch; Pi: ``exportSessionToJsonl``), and the writer
lock (acquire + release beside a bare ``open``/``close`` of the same file).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._harness import Measurement, median
from benchmarks._pi_script import run_pi_script
from benchmarks.store import generate_session

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rpcd.store import SessionManager, writer_lock  # noqa: E402
from rpcd.store.export_html import HtmlExport, render_html  # noqa: E402
from rpcd.store.library import export_branch_jsonl, write_new_file  # noqa: E402
from rpcd.store.listing import list_sessions, parse_query, session_matches  # noqa: E402
from rpcd.store.recency import find_most_recent_session  # noqa: E402

CWD = "/tmp/pi-oracle-project"  # the generator's header cwd
SESSIONS, FULL_SESSIONS = 100, 400
BIG, FULL_BIG = 2_000, 20_000
RUNS = 7


def _times(fn: Callable[[int], object], runs: int) -> list[float]:
    out = []
    for i in range(runs):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def _export_html(big: Path, out: Path) -> None:
    sm = SessionManager.open(str(big))
    page = render_html(HtmlExport(header=sm.get_header(), entries=sm.get_entries(), leaf_id=sm.get_leaf_json_id(),
                                  labels=sm.get_labels(), name=sm.get_session_name(), session_file=str(big)))
    write_new_file(str(out), page.encode("utf-8"))
    os.unlink(out)


def _export_jsonl(big: Path, out: Path) -> None:
    export_branch_jsonl(SessionManager.open(str(big)), str(out))
    os.unlink(out)


def _lock_cycle(path: str) -> None:
    lock = writer_lock.acquire(path)
    assert lock is not None
    lock.release()


def _open_close(path: str) -> None:
    os.close(os.open(path, os.O_RDWR))


def _pi(directory: Path, big: Path, out: Path, runs: int) -> dict[str, list[float]] | None:
    env = {"HOME": str(out), "PI_CODING_AGENT_DIR": str(out / "agent"), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
    request = {"dir": str(directory), "cwd": CWD, "big": str(big), "out": str(out), "runs": runs}
    result: dict[str, list[float]] | None = run_pi_script("sessions", "_sessions_pi.mjs", request, env)
    return result


def run(full: bool) -> list[Measurement]:
    count, size = (FULL_SESSIONS, FULL_BIG) if full else (SESSIONS, BIG)
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-sessions-") as tmp:
        root = Path(tmp)
        directory, out = root / "sessions", root / "out"
        directory.mkdir()
        out.mkdir()
        for n in range(count):
            generate_session(directory / f"s{n:04d}.jsonl", 20 + (n * 7) % 60, seed=n)
        big = root / "big.jsonl"
        generate_session(big, size)
        mb = sum(p.stat().st_size for p in directory.iterdir()) / 1e6
        pi = _pi(directory, big, out, RUNS)
        terms = parse_query("module lazy")
        ours = {
            "list": _times(lambda _: list_sessions(CWD, str(directory)), RUNS),
            "mostRecent": _times(lambda _: find_most_recent_session(CWD, str(directory), custom_dir=True), RUNS),
            "search": _times(lambda _: [i for i in list_sessions(CWD, str(directory)) if session_matches(i, terms)],
                             RUNS),
            "exportHtml": _times(lambda i: _export_html(big, out / f"ours-{i}.html"), RUNS),
            "exportJsonl": _times(lambda i: _export_jsonl(big, out / f"ours-{i}.jsonl"), RUNS),
        }
        writer_lock.set_enabled(True)
        try:
            lock = _times(lambda _: [_lock_cycle(str(big)) for _ in range(1000)], RUNS)
            bare = _times(lambda _: [_open_close(str(big)) for _ in range(1000)], RUNS)
        finally:
            writer_lock.set_enabled(False)
        big_mb = big.stat().st_size / 1e6

    def pi_row(key: str) -> tuple[str | None, float | None]:
        if pi is None or key not in pi:
            return None, None
        return "Pi 0.85.0, same files", median(pi[key])

    listing = f"{count} sessions, {mb:.1f} MB"
    rows = [
        ("list a project's sessions", "list", listing),
        ("--continue lookup (one definition: the listing's first)", "mostRecent", listing),
        ("export HTML (open + render + write)", "exportHtml", f"{size} entries, {big_mb:.1f} MB"),
        ("export JSONL of the branch (open + write)", "exportJsonl", f"{size} entries, {big_mb:.1f} MB"),
    ]
    measurements = []
    for title, key, label in rows:
        baseline_name, baseline = pi_row(key)
        measurements.append(Measurement(name=f"{title} [{label}]", value=median(ours[key]), unit="ms",
                                        baseline_name=baseline_name, baseline_value=baseline))
    measurements.append(Measurement(name=f"search the listing (2 terms) [{listing}]", value=median(ours["search"]),
                                    unit="ms", baseline_name="the listing alone", baseline_value=median(ours["list"])))
    measurements.append(Measurement(name="writer lock: acquire + release (x1000)", value=median(lock), unit="ms",
                                    baseline_name="open + close of the same file (x1000)",
                                    baseline_value=median(bare)))
    return measurements
