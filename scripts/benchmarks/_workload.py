"""What ``scripts/bench --vs-pi`` generates for both sides, from fixed seeds (outside the repo, in the
run's temporary directory): a 10,000-file source tree with the 200 tool calls a model makes on it,
and a project's corpus of Pi-shaped sessions with distinct ids and times.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import orjson

from benchmarks.store import generate_session

TREE_SEED = 38
TREE_DIRS = (20, 10)
"""20 packages of 10 modules' folders each ..."""
FILES_PER_DIR = 50
"""... of 50 files: 10,000 files."""
_IDENTS = ("session", "entry", "leaf", "branch", "tool", "model", "stream", "delta", "event", "queue", "store",
           "prompt", "result", "context", "usage", "handler", "writer", "reader", "index", "cursor")


def generate_tree(root: Path, seed: int = TREE_SEED) -> list[str]:
    """``root/pkgNN/modMM/file_KKK.{py,md,txt}``: 10,000 small files (0.3-3 KB of code-like lines);
    returns their paths relative to ``root``, in creation order."""
    rng = random.Random(seed)
    made: list[str] = []
    for package in range(TREE_DIRS[0]):
        for module in range(TREE_DIRS[1]):
            folder = root / f"pkg{package:02d}" / f"mod{module:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            for number in range(FILES_PER_DIR):
                suffix = (".py", ".py", ".py", ".md", ".txt")[number % 5]
                name = f"file_{number:03d}{suffix}"
                lines = []
                for line in range(rng.randint(10, 80)):
                    a, b = rng.choice(_IDENTS), rng.choice(_IDENTS)
                    if line % 9 == 0:
                        lines.append(f"def {a}_{b}_{rng.randint(0, 999)}({b}: int) -> str:")
                    else:
                        lines.append(f"    {a} = {b}.get({rng.randint(0, 99)})  # {a} of the {b}")
                (folder / name).write_text("\n".join(lines) + "\n")
                made.append(os.path.join(folder.relative_to(root), name))
    return made


def tool_calls(files: list[str], count: int = 200, seed: int = TREE_SEED) -> list[tuple[str, dict[str, Any]]]:
    """``count`` (tool, arguments) a model explores the tree with, cycling read / grep / find / ls:
    a file, a function name searched in one package (20 matches at most), a file-name pattern in one
    package, a module's folder."""
    rng = random.Random(seed + 1)
    calls: list[tuple[str, dict[str, Any]]] = []
    for index in range(count):
        kind = ("read", "grep", "find", "ls")[index % 4]
        package = f"pkg{rng.randrange(TREE_DIRS[0]):02d}"
        if kind == "read":
            calls.append(("read", {"path": rng.choice(files)}))
        elif kind == "grep":
            pattern = f"def {rng.choice(_IDENTS)}_{rng.choice(_IDENTS)}_"
            calls.append(("grep", {"pattern": pattern, "path": package, "limit": 20}))
        elif kind == "find":
            calls.append(("find", {"pattern": f"**/file_{rng.randrange(FILES_PER_DIR):03d}.py", "path": package}))
        else:
            calls.append(("ls", {"path": f"{package}/mod{rng.randrange(TREE_DIRS[1]):02d}"}))
    return calls


def generate_corpus(directory: Path, cwd: str, count: int, entries: int = 40) -> list[Path]:
    """``count`` sessions of ``cwd`` in ``directory`` named as Pi names them, each with its own id,
    seed and times (session k is newer than session k-1, by its messages and by its file's mtime, so
    every definition of "most recent" picks the last one); returns them oldest first."""
    directory.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    base = 1_768_000_000
    for index in range(count):
        stamp = base + index * 3600
        session_id = f"{index:08x}-0000-4000-8000-000000000000"
        name = f"2026-01-{1 + index // 200:02d}T{index % 24:02d}-00-00-000Z_{session_id}.jsonl"
        path = directory / name
        generate_session(path, entries + index % 9, seed=1000 + index, cwd=cwd, clock_ms=stamp * 1000,
                         session_id=session_id)
        os.utime(path, (stamp + 600, stamp + 600))
        made.append(path)
    return made


def session_bytes(path: Path) -> int:
    return os.path.getsize(path)


def first_user_id(path: Path) -> str:
    with open(path, "rb") as handle:
        for line in handle:
            entry = orjson.loads(line)
            if entry.get("type") == "message" and entry["message"].get("role") == "user":
                return str(entry["id"])
    raise ValueError(f"{path}: no user message")
