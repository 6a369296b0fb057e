"""Context files (AGENTS.md and friends) for one cwd, in Pi's order.

Per directory the first existing regular file among ``CONTEXT_FILE_NAMES`` counts.
The global one (``<agentDir>/``) comes first, then every directory from the
filesystem root down to the cwd, so the most specific instructions come last.
Context files load whether or not the project is trusted (Pi's rule: they are text
for the model, not code or configuration).
"""

from __future__ import annotations

import os

import attrs

from rpcd.core.files import read_regular
from rpcd.core.values import Diagnostic

CONTEXT_FILE_NAMES: tuple[str, ...] = ("AGENTS.override.md", "AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


@attrs.frozen
class ContextFile:
    path: str
    content: str


def find_context_file(directory: str) -> str | None:
    for name in CONTEXT_FILE_NAMES:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return candidate
    return None


def ancestors_root_first(cwd: str) -> list[str]:
    """``cwd`` and each parent, from the filesystem root down to ``cwd``."""
    chain: list[str] = []
    current = os.path.abspath(cwd)
    while True:
        chain.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    chain.reverse()
    return chain


def load_context_files(cwd: str, agent_dir: str) -> tuple[list[ContextFile], list[Diagnostic]]:
    """Global file first, then root -> cwd, each path once; unreadable files become warnings."""
    files: list[ContextFile] = []
    diagnostics: list[Diagnostic] = []
    seen: set[str] = set()
    for directory in [os.path.abspath(agent_dir), *ancestors_root_first(cwd)]:
        path = find_context_file(directory)
        if path is None:
            continue
        key = os.path.realpath(path)
        if key in seen:
            continue
        seen.add(key)
        try:
            content = read_regular(path).decode("utf-8", errors="replace").removeprefix("\ufeff")
        except OSError as exc:
            diagnostics.append(
                Diagnostic("warning", f'Could not read context file "{path}": {exc.strerror or type(exc).__name__}')
            )
            continue
        files.append(ContextFile(path, content))
    return files, diagnostics
