"""File checkpoints: what a snapshot and a restore cost on a generated repository of ``FILES`` files
(10,000 with ``--full``), beside what git itself spends looking at the same tree (ratio = ours / git).

The repository: ``FILES`` text files of 1–4 KB in nested directories, committed, plus 2% untracked.
Rows: the first snapshot of the worktree (rpcd's own index is empty: every file is hashed; the
committed blobs are the repository's, so only untracked content is written to the store), a
snapshot with nothing changed (git's stat cache: what a run's start and end cost), one after 20
files changed, the dry run and the restore of those 20; each beside ``git status --porcelain`` on
the same tree (git's own walk of the worktree, with ``--no-optional-locks`` so it writes nothing).
For a project without git (the same files, no ``.git``): the first snapshot (copies every file into
the blob store), a snapshot with nothing changed (one ``stat`` per file), beside ``os.walk`` + ``lstat``
of every file (the floor of looking at the tree). And what the store holds after the first snapshot.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._harness import Measurement, median, times_ms

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rpcd.store.checkpoints import CheckpointStore, restore  # noqa: E402

FILES, FULL_FILES = 2_000, 10_000
RUNS = 5
WORDS = (
    'alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'theta', 'lambda',
    'sigma', 'omega', 'parser', 'token', 'buffer', 'index',
)


def _ms(fn: Callable[[], object], runs: int = RUNS) -> list[float]:
    return times_ms(fn, runs)


def _git(root: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root.parent), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


def _generate(root: Path, count: int) -> list[Path]:
    rng = random.Random(36)
    paths = []
    for n in range(count):
        path = root / f"pkg{n % 40:02d}" / f"mod{n % 7}" / f"file_{n:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(rng.randint(12, 50))))
        paths.append(path)
    return paths


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _git_rows(tmp: Path, count: int) -> list[Measurement]:
    root = tmp / "repo"
    root.mkdir()
    paths = _generate(root, count)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    for n in range(count // 50):  # 2% untracked
        (root / f"untracked_{n}.txt").write_text("untracked " * 50)
    label = f"{count:,} files, git"
    status = _ms(lambda: _git(root, "--no-optional-locks", "status", "--porcelain"))
    store = CheckpointStore(str(tmp / "agent"))
    start = time.perf_counter()
    first = store.begin(str(root), session_id="bench", session_file=None)
    cold = (time.perf_counter() - start) * 1000
    stored = _du(Path(store.directory))
    warm = _ms(lambda: store.begin(str(root), session_id="bench", session_file=None))
    changed = paths[:: max(1, count // 20)][:20]

    def change() -> None:
        for path in changed:
            path.write_text(path.read_text() + "\nchanged by the agent\n")

    record = store.begin(str(root), session_id="bench", session_file=None)
    change()
    after = _ms(lambda: store.finish(record), 3)
    dry = _ms(lambda: restore(store, [record], dry_run=True), 3)
    start = time.perf_counter()
    result = restore(store, [record])
    restored = (time.perf_counter() - start) * 1000
    assert sum(c.applied for c in result.changes) == len(changed), result.changes
    assert first.kind == "git"
    repo_mb = _du(root / ".git") / 1e6
    return [
        Measurement(f"first snapshot (own index empty: every file hashed) [{label}]", cold, "ms",
                    "git status --porcelain, same tree", median(status)),
        Measurement(f"snapshot, nothing changed (a run's start or end) [{label}]", median(warm), "ms",
                    "git status --porcelain, same tree", median(status)),
        Measurement(f"snapshot after 20 files changed [{label}]", median(after), "ms",
                    "git status --porcelain, same tree", median(status)),
        Measurement(f"restore preview (dry run, diffs of 20 files) [{label}]", median(dry), "ms",
                    "git status --porcelain, same tree", median(status)),
        Measurement(f"restore of 20 files (with its own checkpoint first) [{label}]", restored, "ms",
                    "git status --porcelain, same tree", median(status)),
        Measurement(f"store after the first snapshot [{label}]", stored / 1e6, "MB",
                    "the repository's .git", repo_mb,
                    note="committed blobs stay the repository's (an alternate): the store holds the untracked "
                         "files, the trees and rpcd's own index"),
    ]


def _files_rows(tmp: Path, count: int) -> list[Measurement]:
    root = tmp / "plain"
    root.mkdir()
    _generate(root, count)
    label = f"{count:,} files, no git"

    def walk() -> int:
        seen = 0
        for base, _, names in os.walk(root):
            for name in names:
                os.lstat(os.path.join(base, name))
                seen += 1
        return seen

    floor = _ms(walk)
    store = CheckpointStore(str(tmp / "agent-plain"))
    start = time.perf_counter()
    first = store.begin(str(root), session_id="bench", session_file=None)
    cold = (time.perf_counter() - start) * 1000
    assert first.kind == "files" and first.partial is None, first.partial
    warm = _ms(lambda: store.begin(str(root), session_id="bench", session_file=None))
    stored = _du(Path(store.directory)) / 1e6
    return [
        Measurement(f"first snapshot (every file copied) [{label}]", cold, "ms", "os.walk + lstat of every file",
                    median(floor)),
        Measurement(f"snapshot, nothing changed [{label}]", median(warm), "ms", "os.walk + lstat of every file",
                    median(floor)),
        Measurement(f"store after the first snapshot [{label}]", stored, "MB", "the project's files",
                    _du(root) / 1e6, note="zlib-compressed copies, one per distinct content"),
    ]


def run(full: bool) -> list[Measurement]:
    if shutil.which("git") is None:
        print("[checkpoints] git is not installed: only the non-git rows", file=sys.stderr)
    count = FULL_FILES if full else FILES
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-checkpoints-") as tmp:
        rows = _git_rows(Path(tmp), count) if shutil.which("git") else []
        rows += _files_rows(Path(tmp), count)
        return rows
