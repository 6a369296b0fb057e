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
import re
import stat
from collections.abc import Iterator
from typing import Any, Final

from rpcd.tools.base import (
    ABORTED_MESSAGE,
    AbortSignal,
    FunctionTool,
    ToolCallContext,
    ToolResult,
    noted_result,
    schema,
)
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
_Matcher = tuple[str, "_IgnoreFile"]  # (base directory, patterns)


class _IgnoreFile:
    """One ignore file's patterns, matched as the ``ignore`` crate (fd, ripgrep) matches them:
    a pattern must match the entry's own path (relative to the file's directory, with ``/``
    after a directory), not merely a directory above it — which matters when the search root
    lies inside an ignored directory (a virtualenv's site-packages). A pattern without a ``/``
    matches the entry's name alone; one combined regex per kind answers "does any pattern match"
    (the usual "no"), and only a hit walks the patterns for the last match."""

    __slots__ = ("any_name", "any_path", "patterns")

    def __init__(self, patterns: list[tuple[re.Pattern[str], bool, bool]]) -> None:
        self.patterns = patterns
        self.any_name = _union([r for r, _, by_name in patterns if by_name])
        self.any_path = _union([r for r, _, by_name in patterns if not by_name])

    def verdict(self, name: str, relative: str) -> bool | None:
        """``True`` ignored, ``False`` re-included (``!``), ``None`` no pattern matches; last match wins."""
        if (self.any_name is None or self.any_name.fullmatch(name) is None) and (
                self.any_path is None or self.any_path.fullmatch(relative) is None):
            return None
        result: bool | None = None
        for regex, include, by_name in self.patterns:
            if regex.fullmatch(name if by_name else relative) is not None:
                result = include
        return result


def _union(regexes: list[re.Pattern[str]]) -> re.Pattern[str] | None:
    if not regexes:
        return None
    return re.compile("|".join(f"(?:{r.pattern})" for r in regexes), re.DOTALL)


def _plain(pattern: str) -> str:
    """A pathspec regex without its anchor and named groups (so several can be joined)."""
    return re.sub(r"\(\?P<[^>]+>", "(?:", pattern.removeprefix("^"))


def _by_name(source: str) -> bool:
    """A gitignore pattern without a ``/`` (a trailing one aside) matches names at any depth."""
    text = source.strip()
    if text.startswith("!"):
        text = text[1:]
    return "/" not in text.rstrip("/")


def _load(path: str) -> _IgnoreFile | None:
    try:
        with open(path, "rb") as handle:
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    import pathspec  # on the first .gitignore read, not at startup (~20 ms)

    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    patterns: list[tuple[re.Pattern[str], bool, bool]] = []
    for pattern in spec.patterns:
        regex = getattr(pattern, "regex", None)
        if pattern.include is None or not isinstance(regex, re.Pattern):
            continue  # a blank or comment line
        patterns.append((re.compile(_plain(regex.pattern), re.DOTALL), bool(pattern.include),
                         _by_name(str(getattr(pattern, "pattern", "")))))
    return _IgnoreFile(patterns) if patterns else None


class _Rules:
    """The ignore files in force in one directory: per kind, deepest first."""

    __slots__ = ("kinds",)

    def __init__(self, kinds: tuple[tuple[_Matcher, ...], ...]) -> None:
        self.kinds = kinds

    @classmethod
    def empty(cls) -> _Rules:
        return cls(((), (), (), ()))

    def child(self, directory: str, names: frozenset[str] | set[str] | None = None) -> _Rules:
        """The rules inside ``directory`` (``names``: its entries, when already listed)."""
        def has(name: str) -> bool:
            return name in names if names is not None else os.path.lexists(os.path.join(directory, name))

        new_repo = has(".git")
        if not new_repo and not any(has(name) for name in _KINDS):
            return self
        kinds = list(self.kinds)
        if new_repo:
            kinds[2] = ()  # git rules from outside a repository stop at its root
            exclude = _load(os.path.join(directory, ".git", "info", "exclude"))
            kinds[_EXCLUDE] = ((directory, exclude),) if exclude is not None else ()
        for index, name in enumerate(_KINDS):
            if has(name):
                loaded = _load(os.path.join(directory, name))
                if loaded is not None:
                    kinds[index] = ((directory, loaded), *kinds[index])
        return _Rules(tuple(kinds))

    def for_directory(self, directory: str) -> list[list[tuple[str, _IgnoreFile]]] | None:
        """Per kind, ``(prefix of entries of directory relative to the file's base, file)``."""
        if not any(self.kinds):
            return None
        out: list[list[tuple[str, _IgnoreFile]]] = []
        for matchers in self.kinds:
            row = []
            for base, ignore in matchers:
                prefix = "" if directory == base else directory[len(base) + 1:] + "/"
                row.append((prefix, ignore))
            out.append(row)
        return out


def _ignored(prepared: list[list[tuple[str, _IgnoreFile]]], name: str, is_dir: bool) -> bool:
    for row in prepared:
        for prefix, ignore in row:
            entry = f"{name}/" if is_dir else name
            verdict = ignore.verdict(entry, prefix + entry)
            if verdict is not None:
                return verdict
    return False


def _root_rules(search_path: str) -> _Rules:
    """Rules from the search root and its ancestors, outermost first."""
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
        rules = rules.child(directory)
    return rules


def _walk(search_path: str, rules: _Rules, signal: AbortSignal) -> Iterator[tuple[str, bool]]:
    """(absolute path, is a directory) for every entry fd would list, in walk order."""
    stack: list[tuple[str, _Rules | None, _Rules]] = [(search_path, rules, rules)]
    while stack:
        directory, own, inherited = stack.pop()
        if signal.aborted:
            return
        try:
            with os.scandir(directory) as iterator:
                entries = sorted(iterator, key=lambda e: e.name)
        except OSError:
            continue  # fd reports unreadable directories on stderr and goes on
        here = own if own is not None else inherited.child(directory, {e.name for e in entries})
        prepared = here.for_directory(directory)
        subdirs: list[str] = []
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if prepared is not None and _ignored(prepared, name, is_dir):
                continue
            yield entry.path, is_dir
            if is_dir:
                subdirs.append(entry.path)
        for path in reversed(subdirs):
            stack.append((path, None, here))


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
    rules = _root_rules(search_path)
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
        return noted_result(output, notices, details)

    return FunctionTool(
        name=NAME, label=NAME, description=DESCRIPTION, parameters=PARAMETERS, run=execute,
        prompt_snippet=PROMPT_SNIPPET,
    )
