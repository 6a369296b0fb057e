"""Glob patterns as fd matches them (the ``globset`` crate with ``literal_separator``): ``*`` and
``?`` stay within one path component, ``**`` spans components, ``[...]``/``[!...]`` classes,
``{a,b}`` alternatives, ``\\`` escapes. fd's smart case: a pattern without an upper-case letter
matches case-insensitively."""

from __future__ import annotations

import re


def _class(pattern: str, index: int) -> tuple[str, int]:
    """Translate ``[...]`` starting at ``index`` (the ``[``); returns (regex, next index)."""
    j = index + 1
    negate = False
    if j < len(pattern) and pattern[j] in "!^":
        negate = True
        j += 1
    body: list[str] = []
    first = True
    while j < len(pattern) and (pattern[j] != "]" or first):
        char = pattern[j]
        first = False
        if char == "\\" and j + 1 < len(pattern):
            body.append(re.escape(pattern[j + 1]))
            j += 2
            continue
        if char == "-" and body and j + 1 < len(pattern) and pattern[j + 1] != "]":
            body.append("-")
        else:
            body.append(re.escape(char) if char not in "-" else "\\-")
        j += 1
    if j >= len(pattern):
        return re.escape("["), index + 1  # an unclosed class is a literal '['
    return ("[^" if negate else "[") + "".join(body) + "]", j + 1


def glob_to_regex(pattern: str) -> str:
    out: list[str] = []
    i = 0
    depth = 0
    n = len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            if i + 1 < n and pattern[i + 1] == "*":
                start_ok = i == 0 or pattern[i - 1] == "/"
                end = i + 2
                end_ok = end == n or pattern[end] == "/"
                if start_ok and end_ok:
                    if end == n:  # a trailing "**" (or the whole pattern): anything
                        out.append(".*")
                        i = end
                        continue
                    out.append("(?:.*/)?")  # "**/": zero or more directories
                    i = end + 1
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            regex, i = _class(pattern, i)
            out.append(regex)
            continue
        elif char == "{":
            depth += 1
            out.append("(?:")
        elif char == "}" and depth:
            depth -= 1
            out.append(")")
        elif char == "," and depth:
            out.append("|")
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        else:
            out.append(re.escape(char))
        i += 1
    out.extend(")" * depth)
    return "^" + "".join(out) + "$"


def compile_glob(pattern: str) -> re.Pattern[str]:
    """The glob as a regex, case-insensitive when the pattern has no upper-case letter (smart case)."""
    flags = re.DOTALL
    if not any(ch.isupper() for ch in pattern):
        flags |= re.IGNORECASE
    return re.compile(glob_to_regex(pattern), flags)
