"""``find``: files and directories whose name (or path) matches a glob, ``.gitignore`` respected
(Pi's ``find.js``, which runs ``fd --glob --hidden``; rpcd walks the tree itself).

What fd does, done here: hidden entries included, ``.git`` never listed, ignore files honoured
at every level and in the ancestors of the search root (``.fdignore`` over ``.ignore`` over
``.gitignore`` over ``.git/info/exclude``, the deepest match of each kind deciding; ignore
rules from above a repository do not reach into it), an ignored directory not entered,
symlinks listed but not followed, the pattern matched against the entry name — or, when it
contains ``/``, against the absolute path with ``**/`` prefixed as Pi prefixes it — smart case,
at most ``limit`` results, directories with a trailing ``/``. Results come in walk order
(sorted by name per directory); fd's parallel walk has no fixed order.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import Any, Final

import pathspec

from rpcd.tools.base import ABORTED_MESSAGE, AbortSignal, FunctionTool, ToolCallContext, ToolResult, schema
from rpcd.tools.blocking import run_blocking
from rpcd.tools.errors import ToolError
from rpcd.tools.globs import compile_glob
from rpcd.tools.paths import resolve_to_cwd
from rpcd.tools.truncate import DEFAULT_MAX_BYTES, UNLIMITED_LINES, format_size, truncate_head
from rpcd.tools.validation import js_number_text

NAME: Final = "find"
DEFAULT_LIMIT: Final = 1000
DESCRIPTION: Final = (
    "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects "
    f".gitignore. Output is truncated to {DEFAULT_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit "
    "first)."
)
PARAMETERS: Final = schema(
    {
        "pattern": {"type": "string",
                    "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'"},
        "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
        "limit": {"type": "number", "description": f"Maximum number of results (default: {DEFAULT_LIMIT})"},
    },
    ("pattern",),
)
PROMPT_SNIPPET: Final = "Find files by glob pattern (respects .gitignore)"

# Ignore-file kinds in precedence order (fd: custom ignore files > .ignore > .gitignore > exclude).
_KINDS: Final = (".fdignore", ".ignore", ".gitignore")
_EXCLUDE: Final = 3
_Matcher = tuple[str, pathspec.GitIgnoreSpec]  # (base directory, spec)


def _spec(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, "rb") as handle:
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    lines = [line for line in lines if line.strip() and not line.startswith("#")]
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


class _Rules:
    """The ignore matchers in force in one directory: per kind, deepest first."""

    __slots__ = ("kinds",)

    def __init__(self, kinds: tuple[tuple[_Matcher, ...], ...]) -> None:
        self.kinds = kinds

    @classmethod
    def empty(cls) -> _Rules:
        return cls(((), (), (), ()))

    def child(self, directory: str, *, new_repo: bool) -> _Rules:
        kinds = list(self.kinds)
        if new_repo:
            kinds[2] = ()  # git rules from outside a repository stop at its root
            kinds[_EXCLUDE] = ()
            exclude = _spec(os.path.join(directory, ".git", "info", "exclude"))
            if exclude is not None:
                kinds[_EXCLUDE] = ((directory, exclude),)
        for index, name in enumerate(_KINDS):
            spec = _spec(os.path.join(directory, name))
            if spec is not None:
                kinds[index] = ((directory, spec), *kinds[index])
        return _Rules(tuple(kinds))

    @property
    def active(self) -> bool:
        return any(self.kinds)

    def ignored(self, path: str, is_dir: bool) -> bool:
        for matchers in self.kinds:
            for base, spec in matchers:
                relative = os.path.relpath(path, base)
                if relative.startswith(".."):
                    continue
                if is_dir:
                    relative += "/"
                verdict = spec.check_file(relative).include
                if verdict is not None:
                    return verdict
        return False


def _repo_root(start: str) -> str | None:
    current = start
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _root_rules(search_path: str, repo: str | None) -> _Rules:
    """Rules from the ancestors of the search root (and the root itself)."""
    chain: list[str] = []
    current = search_path
    while True:
        chain.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    rules = _Rules.empty()
    for directory in reversed(chain):
        rules = rules.child(directory, new_repo=directory == repo)
        if repo is not None and directory != repo and len(directory) < len(repo) and rules.kinds[2]:
            # a .gitignore above the repository never applies inside it
            kinds = list(rules.kinds)
            kinds[2] = ()
            rules = _Rules(tuple(kinds))
    return rules


def _walk(search_path: str, rules: _Rules, signal: AbortSignal) -> Iterator[tuple[str, bool]]:
    """(absolute path, is a directory) for every entry fd would consider, in walk order."""
    stack: list[tuple[str, _Rules]] = [(search_path, rules)]
    while stack:
        directory, here = stack.pop()
        if signal.aborted:
            return
        try:
            with os.scandir(directory) as iterator:
                entries = sorted(iterator, key=lambda e: e.name)
        except OSError:
            continue  # fd reports unreadable directories on stderr and goes on
        subdirs: list[tuple[str, _Rules]] = []
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            path = entry.path
            if here.active and here.ignored(path, is_dir):
                continue
            yield path, is_dir
            if is_dir:
                subdirs.append((path, here))
        for path, parent_rules in reversed(subdirs):
            new_repo = os.path.lexists(os.path.join(path, ".git"))
            stack.append((path, parent_rules.child(path, new_repo=new_repo)))


def _find(search_path: str, pattern: str, limit: int | float, signal: AbortSignal) -> list[str]:
    try:
        info = os.stat(search_path)
    except OSError:
        info = None
    if info is None or not stat.S_ISDIR(info.st_mode):
        raise ToolError(f"[fd error]: Search path '{search_path}' is not a directory.\n"
                        "[fd error]: No valid search paths given.")
    full_path = "/" in pattern
    effective = pattern
    if full_path and not pattern.startswith("/") and not pattern.startswith("**/") and pattern != "**":
        effective = f"**/{pattern}"
    matcher = compile_glob(effective).match
    repo = _repo_root(search_path)
    rules = _root_rules(search_path, repo)
    results: list[str] = []
    prefix_len = len(search_path.rstrip("/")) + 1
    for path, is_dir in _walk(search_path, rules, signal):
        subject = path if full_path else path[path.rfind("/") + 1:]
        if matcher(subject):
            relative = path[prefix_len:]
            results.append(relative + "/" if is_dir else relative)
            if len(results) >= limit:
                break
    return results


def create_find_tool(cwd: str) -> FunctionTool:
    """Pi's ``createFindTool(cwd)``."""

    async def execute(tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        signal = ctx.signal
        if signal.aborted:
            raise ToolError(ABORTED_MESSAGE)
        search_path = resolve_to_cwd(args.get("path") or ".", cwd)
        limit_arg = args.get("limit")
        limit = DEFAULT_LIMIT if limit_arg is None else limit_arg
        pattern = args["pattern"]
        found = await run_blocking(lambda: _find(search_path, pattern, limit, signal), signal)
        if signal.aborted:
            raise ToolError(ABORTED_MESSAGE)
        if not found:
            return {"content": [{"type": "text", "text": "No files found matching pattern"}]}
        truncation = truncate_head("\n".join(found), max_lines=UNLIMITED_LINES)
        output = truncation["content"]
        details: dict[str, Any] = {}
        notices: list[str] = []
        if len(found) >= limit:
            notices.append(f"{js_number_text(limit)} results limit reached. Use limit={js_number_text(limit * 2)} for "
                           "more, or refine pattern")
            details["resultLimitReached"] = limit
        if truncation["truncated"]:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation
        if notices:
            output += f"\n\n[{'. '.join(notices)}]"
        result: ToolResult = {"content": [{"type": "text", "text": output}]}
        if details:
            result["details"] = details
        return result

    return FunctionTool(
        name=NAME, label=NAME, description=DESCRIPTION, parameters=PARAMETERS, run=execute,
        prompt_snippet=PROMPT_SNIPPET,
    )
