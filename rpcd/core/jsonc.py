"""JSON with comments, as Pi reads ``models.json`` (``//`` and ``/* */`` outside strings) and as
``pi-mcp-adapter`` reads ``mcp.json`` (comments and trailing commas): the text made plain JSON,
strings untouched."""

from __future__ import annotations


def strip_jsonc(text: str, *, trailing_commas: bool = False) -> str:
    """``text`` without its comments (and, with ``trailing_commas``, without a comma before ``}``/``]``)."""
    if "/" not in text and not (trailing_commas and "," in text):
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end == -1 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end == -1 else end + 2
        elif ch == "," and trailing_commas:
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if not (j < n and text[j] in "}]"):
                out.append(ch)
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)
