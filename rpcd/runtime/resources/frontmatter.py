"""Markdown frontmatter as Pi 0.85.0 reads it (``utils/frontmatter.js``), with a YAML reader.

Pi strips a BOM, turns CRLF/CR into LF, and takes the text between a leading ``---`` and the
first ``\\n---`` as YAML (the ``yaml`` package, YAML 1.2 core schema); the body after it is
trimmed. Prompt templates and skills read ``description``, ``name``, ``argument-hint`` and
``disable-model-invocation`` from it.

The YAML reader here covers what frontmatter is written with: block mappings and sequences,
plain (multi-line, folded), single- and double-quoted scalars, literal and folded block scalars
with chomping and indentation indicators, flow sequences and mappings, comments, and the core
schema's null/bool/int/float. It refuses, with :class:`FrontmatterError`, what YAML refuses and
Pi users hit (``description: Use when: ...`` — a mapping inside a compact value, tabs as
indentation, duplicate keys, unterminated quotes, bad indentation) and what it does not read
(anchors, aliases, tags, complex keys, directives): a skill whose frontmatter cannot be read is a
warning, as in Pi. ``tests/pi_compat/test_frontmatter_against_pi.py`` compares it with Pi's own
``parseFrontmatter`` on a corpus.
"""

from __future__ import annotations

import math
import re
from typing import Any

import attrs

from rpcd.core.jstext import js_trim

__all__ = ["Frontmatter", "FrontmatterError", "parse_frontmatter", "parse_yaml", "strip_frontmatter"]


class FrontmatterError(ValueError):
    """The frontmatter is not YAML this reader accepts (Pi's ``parse`` throws on most of these)."""


@attrs.frozen
class Frontmatter:
    data: dict[str, Any]
    """The YAML mapping (``{}`` without frontmatter or when the YAML is not a mapping)."""
    body: str


def _normalize(content: str) -> str:
    return content.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def parse_frontmatter(content: str) -> Frontmatter:
    """Pi's ``parseFrontmatter``; raises :class:`FrontmatterError` when the YAML is malformed."""
    normalized = _normalize(content)
    if not normalized.startswith("---"):
        return Frontmatter({}, normalized)
    end = normalized.find("\n---", 3)
    if end == -1:
        return Frontmatter({}, normalized)
    yaml_text = normalized[4:end]
    body = js_trim(normalized[end + 4 :])
    if not yaml_text:
        return Frontmatter({}, body)
    parsed = parse_yaml(yaml_text)
    return Frontmatter(parsed if isinstance(parsed, dict) else {}, body)


def strip_frontmatter(content: str) -> str:
    """Pi's ``stripFrontmatter`` (the body; malformed YAML raises like Pi's)."""
    return parse_frontmatter(content).body


# -- the YAML reader ---------------------------------------------------------------------------

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_TRUE = re.compile(r"^(?:true|True|TRUE)$")
_FALSE = re.compile(r"^(?:false|False|FALSE)$")
_INT = re.compile(r"^[-+]?[0-9]+$")
_OCT = re.compile(r"^0o[0-7]+$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")
_BLOCK_HEADER = re.compile(r"^([|>])([1-9]?)([+-]?)([1-9]?)(?:\s+#.*)?\s*$")
_UNSUPPORTED_START = "&*!%@`?"
_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
    "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
    "P": "\u2029",
}


def resolve_plain(text: str) -> Any:
    """A plain scalar under the YAML 1.2 core schema."""
    if _NULL.match(text):
        return None
    if _TRUE.match(text):
        return True
    if _FALSE.match(text):
        return False
    if _INT.match(text):
        return int(text)
    if _OCT.match(text):
        return int(text[2:], 8)
    if _HEX.match(text):
        return int(text[2:], 16)
    if _FLOAT.match(text):
        return float(text)
    if _INF.match(text):
        return -math.inf if text.startswith("-") else math.inf
    if _NAN.match(text):
        return math.nan
    return text


def parse_yaml(text: str) -> Any:
    """One YAML document (no ``---``/``...`` markers inside frontmatter)."""
    return _Reader(text).document()


def _starts(text: str, chars: str) -> bool:
    """``text`` starts with one of ``chars`` (an empty text starts with none)."""
    return bool(text) and text[0] in chars


def _strip_comment(text: str) -> str:
    """Drop a `` #`` comment from plain text (a ``#`` glued to text is content)."""
    if text.startswith("#"):
        return ""
    index = text.find(" #")
    tab = text.find("\t#")
    cuts = [i for i in (index, tab) if i != -1]
    return (text[: min(cuts)] if cuts else text).rstrip(" \t")


def _find_mapping_colon(text: str) -> int:
    """Where ``key: value`` splits in a plain-key line, or -1 (``: `` or a final ``:``)."""
    i = 0
    while True:
        i = text.find(":", i)
        if i == -1:
            return -1
        if i + 1 == len(text) or text[i + 1] in " \t":
            head = text[:i]
            if " #" in head or "\t#" in head:
                return -1  # the colon is inside a comment
            return i
        i += 1


def _key_text(value: Any) -> str:
    """A mapping key as a JavaScript object key (``yaml``'s ``toJS``)."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    return str(value)


class _Reader:
    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self._unterminated_last = not text.endswith("\n")
        if not self._unterminated_last:
            self.lines.pop()  # the final line break ends the last line; it starts none
        self._anchors: dict[str, Any] = {}
        self.pos = 0
        # A "- item" line is re-read as the item at its own column: (line index, column) overrides.
        self._virtual: dict[int, int] = {}

    # -- lines --------------------------------------------------------------------------

    def _indent_and_text(self, index: int) -> tuple[int, str]:
        line = self.lines[index]
        start = self._virtual.get(index, 0)
        stripped = line[start:].lstrip(" ")
        indent = len(line) - len(stripped)
        if stripped.startswith("\t") and stripped.strip(" \t"):
            raise FrontmatterError(f"line {index + 1}: tabs are not allowed as indentation")
        return indent, stripped

    def _is_blank(self, index: int) -> bool:
        text = self.lines[index][self._virtual.get(index, 0) :].strip(" \t")
        return text == "" or text.startswith("#")

    def _next_content(self) -> int | None:
        """Skip blank and comment lines; the index of the next content line, if any."""
        while self.pos < len(self.lines):
            if not self._is_blank(self.pos):
                text = self.lines[self.pos][self._virtual.get(self.pos, 0) :]
                if text.rstrip() == "..." and self.pos not in self._virtual:
                    # the document end marker: what follows would be a second document
                    rest = range(self.pos + 1, len(self.lines))
                    if any(not self._is_blank(i) for i in rest):
                        raise FrontmatterError(f"line {self.pos + 1}: source contains multiple documents")
                    self.pos = len(self.lines)
                    return None
                return self.pos
            self.pos += 1
        return None

    # -- nodes --------------------------------------------------------------------------

    def document(self) -> Any:
        index = self._next_content()
        if index is None:
            return None
        indent, _ = self._indent_and_text(index)
        value = self._block_node(indent - 1)
        leftover = self._next_content()
        if leftover is not None:
            raise FrontmatterError(f"line {leftover + 1}: unexpected content (bad indentation?)")
        return value

    def _block_node(self, parent_indent: int) -> Any:
        """The node starting at the current content line (indented more than ``parent_indent``)."""
        index = self._next_content()
        if index is None:
            return None
        indent, text = self._indent_and_text(index)
        if indent <= parent_indent:
            return None
        if text == "-" or text.startswith(("- ", "-\t")):
            return self._sequence(indent)
        if self._mapping_split(text) is not None:
            return self._mapping(indent)
        return self._scalar_value(text, index, parent_indent)

    def _mapping_split(self, text: str) -> tuple[str, str] | None:
        """``(key, rest)`` if ``text`` is a ``key: value`` entry."""
        if text[:1] == "?" and text[1:2] in ("", " ", "\t"):
            raise FrontmatterError(f"unsupported YAML (complex keys): {text[:20]!r}")
        if _starts(text, "&!"):
            # properties before a key: read the entry without them (the anchor/tag is not kept)
            rest = text
            while _starts(rest, "&!"):
                rest = rest.partition(" ")[2].lstrip(" \t")
            return self._mapping_split(rest) if rest else None
        if _starts(text, "\"'"):
            end = _quoted_end(text)
            if end is None:
                return None
            rest = text[end:].lstrip(" \t")
            if rest == ":" or rest.startswith((": ", ":\t")):
                return text[:end], rest[1:]
            return None
        if _starts(text, "[{|>%@`"):
            return None
        colon = _find_mapping_colon(text)
        if colon == -1:
            return None
        return text[:colon].rstrip(" \t"), text[colon + 1 :]

    def _mapping(self, indent: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while True:
            index = self._next_content()
            if index is None:
                return out
            line_indent, text = self._indent_and_text(index)
            if line_indent < indent:
                return out
            if line_indent > indent:
                raise FrontmatterError(f"line {index + 1}: bad indentation of a mapping entry")
            split = self._mapping_split(text)
            if split is None:
                if text == "-" or text.startswith(("- ", "-\t")):
                    raise FrontmatterError(f"line {index + 1}: a sequence entry where a mapping key is expected")
                raise FrontmatterError(f"line {index + 1}: expected a mapping entry (key: value)")
            raw_key, rest = split
            key = _key_text(self._key(raw_key, index))
            if key in out:
                raise FrontmatterError(f"line {index + 1}: map keys must be unique ({key!r})")
            self.pos = index + 1
            value_text = rest.lstrip(" \t")
            if _strip_comment(value_text) == "":
                out[key] = self._nested_value(indent)
            else:
                out[key] = self._scalar_value(value_text, index, indent)

    def _key(self, raw: str, index: int) -> Any:
        if _starts(raw, "\"'"):
            return _quoted(raw, index)
        if _starts(raw, _UNSUPPORTED_START):
            raise FrontmatterError(f"line {index + 1}: unsupported YAML key {raw[:20]!r}")
        return resolve_plain(raw)

    def _nested_value(self, indent: int) -> Any:
        """The value of ``key:`` with nothing after it: a block below, a sequence at the key's column, or null."""
        index = self._next_content()
        if index is None:
            return None
        line_indent, text = self._indent_and_text(index)
        if line_indent > indent:
            return self._block_node(indent)
        if line_indent == indent and (text == "-" or text.startswith(("- ", "-\t"))):
            return self._sequence(indent)
        return None

    def _sequence(self, indent: int) -> list[Any]:
        out: list[Any] = []
        while True:
            index = self._next_content()
            if index is None:
                return out
            line_indent, text = self._indent_and_text(index)
            if line_indent < indent:
                return out
            if line_indent > indent:
                raise FrontmatterError(f"line {index + 1}: bad indentation of a sequence entry")
            if not (text == "-" or text.startswith(("- ", "-\t"))):
                return out
            rest = text[1:]
            item_text = rest.lstrip(" \t")
            if _strip_comment(item_text) == "":
                self.pos = index + 1
                out.append(self._nested_value(indent) if self._nested_is_deeper(indent) else None)
                continue
            column = line_indent + 1 + (len(rest) - len(item_text))
            self._virtual[index] = column
            self.pos = index
            out.append(self._block_node(indent))

    def _nested_is_deeper(self, indent: int) -> bool:
        index = self._next_content()
        return index is not None and self._indent_and_text(index)[0] > indent

    def _scalar_value(self, text: str, index: int, parent_indent: int) -> Any:
        head = text[:1]  # text is never empty here
        if head == "*":
            name, _, rest = text[1:].partition(" ")
            if _strip_comment(rest.strip(" \t")):
                raise FrontmatterError(f"line {index + 1}: unexpected text after an alias")
            if name not in self._anchors:
                raise FrontmatterError(f"line {index + 1}: unresolved alias *{name}")
            self.pos = index + 1
            return self._anchors[name]
        if head in "&!":
            return self._with_properties(text, index, parent_indent)
        if head in "%@`":
            raise FrontmatterError(f"line {index + 1}: {head!r} cannot start a plain scalar")
        if head in "|>":
            return self._block_scalar(text, index, parent_indent)
        if head in "\"'":
            return self._multiline_quoted(text, index, parent_indent)
        if head in "[{":
            return self._flow(text, index, parent_indent)
        return self._plain(text, index, parent_indent)

    def _with_properties(self, text: str, index: int, parent_indent: int) -> Any:
        """``&anchor`` and ``!tag`` before a value. A tagged scalar is its text, unresolved (``yaml``
        keeps an unknown tag's scalar as a string, ``!!str`` likewise); a tagged collection is kept."""
        anchor: str | None = None
        tagged = False
        rest = text
        while _starts(rest, "&!"):
            token, _, rest = rest.partition(" ")
            rest = rest.lstrip(" \t")
            if token.startswith("&"):
                if anchor is not None:
                    raise FrontmatterError(f"line {index + 1}: a node can have at most one anchor")
                anchor = token[1:]
            else:
                if tagged:
                    raise FrontmatterError(f"line {index + 1}: a node can have at most one tag")
                tagged = True
        value: Any
        if _strip_comment(rest) == "":
            self.pos = index + 1
            below = self._next_content()
            if below is not None:
                head = self._indent_and_text(below)[1][:1]
                if (head == "!" and tagged) or (head == "&" and anchor is not None):
                    raise FrontmatterError(f"line {below + 1}: a node can have at most one tag and one anchor")
            value = self._block_node(parent_indent)
            if value is None and tagged:
                value = ""
        elif tagged and not _starts(rest, "[{|>\"'*&!%@`"):
            value = self._plain(rest, index, parent_indent, resolve=False)
        else:
            value = self._scalar_value(rest, index, parent_indent)
        if anchor is not None:
            self._anchors[anchor] = value
        return value

    def _plain(self, text: str, index: int, parent_indent: int, *, resolve: bool = True) -> Any:
        first = _strip_comment(text)
        if _starts(first, "-?:") and first[1:2] in ("", " ", "\t"):
            raise FrontmatterError(f"line {index + 1}: {first[:1]!r} followed by a space cannot start a value here")
        if _find_mapping_colon(first) != -1:
            raise FrontmatterError(f"line {index + 1}: nested mappings are not allowed in compact mappings")
        parts = [first]
        commented = first != text.rstrip(" \t")
        self.pos = index + 1
        pending_breaks = 0
        while self.pos < len(self.lines) and not commented:
            line = self.lines[self.pos]
            stripped = line.strip(" \t")
            if stripped == "":
                pending_breaks += 1
                self.pos += 1
                continue
            indent = len(line) - len(line.lstrip(" "))
            if indent <= parent_indent or stripped.startswith("#"):
                break
            if line.lstrip(" ").startswith("\t") and indent <= parent_indent + 1:
                break
            if _find_mapping_colon(_strip_comment(stripped)) != -1:
                raise FrontmatterError(f"line {self.pos + 1}: a plain scalar cannot continue with a mapping entry")
            piece = _strip_comment(stripped)
            commented = piece != stripped
            parts.append("\n" * pending_breaks if pending_breaks else " ")
            parts.append(piece)
            pending_breaks = 0
            self.pos += 1
        joined = "".join(parts)
        return resolve_plain(joined) if resolve else joined

    def _multiline_quoted(self, text: str, index: int, parent_indent: int) -> str:
        gathered = text
        self.pos = index + 1
        while _quoted_end(gathered) is None:
            if self.pos >= len(self.lines):
                raise FrontmatterError(f"line {index + 1}: missing closing quote")
            gathered += "\n" + self.lines[self.pos]
            self.pos += 1
        end = _quoted_end(gathered)
        assert end is not None
        after = gathered[end:].strip(" \t")
        if after and not after.startswith("#"):
            raise FrontmatterError(f"line {index + 1}: unexpected text after a quoted scalar")
        return _quoted(gathered[:end], index)

    def _block_scalar(self, header: str, index: int, parent_indent: int) -> str:
        match = _BLOCK_HEADER.match(header)
        if match is None:
            raise FrontmatterError(f"line {index + 1}: bad block scalar header {header!r}")
        style, digit_a, chomp, digit_b = match.groups()
        explicit = digit_a or digit_b
        self.pos = index + 1
        raw: list[str] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.strip(" ") and len(line) - len(line.lstrip(" ")) <= parent_indent:
                break
            raw.append(line)
            self.pos += 1
        first = next((len(line) - len(line.lstrip(" ")) for line in raw if line.strip(" ")), None)
        if explicit:
            content_indent = max(parent_indent, 0) + int(explicit)
        else:
            content_indent = 0 if first is None else first
            for line in raw if first is not None else ():
                if line.strip(" "):
                    break
                if len(line) > content_indent:
                    raise FrontmatterError(f"line {index + 1}: a leading empty line is indented more than the block")
        if (first is not None and raw and self._unterminated_last and self.pos == len(self.lines)
                and not raw[-1].strip(" ") and len(raw[-1]) <= content_indent):
            raw.pop()  # an empty line after the input's last line break is no line at all
        for number, line in enumerate(raw):
            # a comment less indented than the content ends the block (the rest is the mapping's)
            stripped = line.lstrip(" ")
            if stripped and len(line) - len(stripped) < content_indent and stripped.startswith("#"):
                self.pos -= len(raw) - number
                raw = raw[:number]
                break
        lines: list[str] = []
        for number, line in enumerate(raw):
            if line.strip(" ") == "":
                lines.append(line[content_indent:] if len(line) > content_indent else "")
                continue
            if len(line) - len(line.lstrip(" ")) < content_indent:
                raise FrontmatterError(f"line {index + 2 + number}: bad indentation in a block scalar")
            lines.append(line[content_indent:])
        if first is None:
            lines = ["" for _ in lines]  # nothing but blanks: all of them are empty lines
        end = len(lines)
        while end > 0 and lines[end - 1] == "":
            end -= 1
        body_lines, trailing = lines[:end], lines[end:]
        if not body_lines:
            return "\n" * len(trailing) if chomp == "+" else ""
        body = "\n".join(body_lines) if style == "|" else _fold(body_lines)
        if chomp == "-":
            return body
        if chomp == "+":
            return body + "\n" + "\n" * len(trailing)
        return body + "\n"

    def _flow(self, text: str, index: int, parent_indent: int) -> Any:
        gathered = text
        self.pos = index + 1
        while True:
            try:
                value, end = _FlowParser(gathered).parse()
            except _Incomplete:
                if self.pos >= len(self.lines):
                    raise FrontmatterError(f"line {index + 1}: unterminated flow collection") from None
                gathered += "\n" + self.lines[self.pos]
                self.pos += 1
                continue
            after = gathered[end:].strip(" \t\n")
            if after and not after.startswith("#"):
                raise FrontmatterError(f"line {index + 1}: unexpected text after a flow collection")
            return value


def _fold(lines: list[str]) -> str:
    """Folded block scalar content: a break between two text lines is a space, empty lines stay line
    breaks, and breaks around more-indented lines are kept."""
    leading = 0
    while leading < len(lines) and lines[leading] == "":
        leading += 1
    out: list[str] = ["\n" * leading]
    i = leading
    while i < len(lines):
        line = lines[i]
        out.append(line)
        j = i + 1
        while j < len(lines) and lines[j] == "":
            j += 1
        if j >= len(lines):
            break
        empties = j - i - 1
        if line.startswith((" ", "\t")) or lines[j].startswith((" ", "\t")):
            out.append("\n" * (empties + 1))
        else:
            out.append("\n" * empties if empties else " ")
        i = j
    return "".join(out)


def _fold_lines(inner: str, *, escapes: bool) -> str:
    """Line folding of a multi-line flow scalar: a single break is a space, each empty line a
    newline; leading/trailing blanks of the inner lines go. With ``escapes`` (double quotes), a
    line ending in an odd number of backslashes joins the next line directly (an escaped break)."""
    lines = inner.split("\n")
    if len(lines) == 1:
        return inner
    out = ""
    empties = 0
    joined = False
    last = len(lines) - 1
    for k, line in enumerate(lines):
        if k > 0:
            line = line.lstrip(" \t")
        escaped = False
        if k < last:
            backslashes = len(line) - len(line.rstrip("\\"))
            if escapes and backslashes % 2 == 1:
                escaped, line = True, line[:-1]
            else:
                line = line.rstrip(" \t")
        if k == 0:
            out = line
        elif line == "" and k < last and not joined:
            empties += 1
            continue
        elif joined:
            out += line
        else:
            out += ("\n" * empties if empties else " ") + line
            empties = 0
        joined = escaped
    return out


def _quoted_end(text: str) -> int | None:
    """The index after the closing quote of the quoted scalar ``text`` starts with, or ``None``."""
    quote = text[0]
    i = 1
    while i < len(text):
        char = text[i]
        if quote == '"' and char == "\\":
            i += 2
            continue
        if char == quote:
            if quote == "'" and text[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i + 1
        i += 1
    return None


def _quoted(text: str, index: int) -> str:
    quote = text[0]
    inner = text[1:-1]
    if quote == "'":
        return _fold_lines(inner, escapes=False).replace("''", "'")
    return _unescape_double(_fold_lines(inner, escapes=True), index)


def _unescape_double(folded: str, index: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(folded):
        char = folded[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        code = folded[i + 1 : i + 2]
        if code and code in _ESCAPES:
            out.append(_ESCAPES[code])
            i += 2
            continue
        width = {"x": 2, "u": 4, "U": 8}.get(code)
        if width is None:
            raise FrontmatterError(f"line {index + 1}: invalid escape sequence \\{code}")
        digits = folded[i + 2 : i + 2 + width]
        if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise FrontmatterError(f"line {index + 1}: invalid escape sequence \\{code}{digits}")
        out.append(chr(int(digits, 16)))
        i += 2 + width
    return "".join(out)


class _Incomplete(Exception):
    """The flow collection continues on the next line."""


class _FlowParser:
    """``[a, "b", {c: d}]`` and ``{a: b, c: [d]}``: one flow collection."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def parse(self) -> tuple[Any, int]:
        value = self._node()
        return value, self.i

    def _skip(self) -> None:
        while self.i < len(self.text):
            char = self.text[self.i]
            if char in " \t\n":
                self.i += 1
            elif char == "#" and (self.i == 0 or self.text[self.i - 1] in " \t\n"):
                newline = self.text.find("\n", self.i)
                if newline == -1:
                    self.i = len(self.text)
                else:
                    self.i = newline
            else:
                return

    def _peek(self) -> str:
        self._skip()
        if self.i >= len(self.text):
            raise _Incomplete
        return self.text[self.i]

    def _node(self) -> Any:
        char = self._peek()
        if char == "[":
            return self._sequence()
        if char == "{":
            return self._mapping()
        if char in "\"'":
            end = _quoted_end(self.text[self.i :])
            if end is None:
                raise _Incomplete
            raw = self.text[self.i : self.i + end]
            self.i += end
            return _quoted(raw, 0)
        if char in "&*!%@`":
            raise FrontmatterError(f"unsupported YAML in a flow collection: {char!r}")
        start = self.i
        while self.i < len(self.text):
            char = self.text[self.i]
            if char in ",[]{}":
                break
            if char == ":" and (self.i + 1 >= len(self.text) or self.text[self.i + 1] in " \t\n,[]{}"):
                break
            if char == "#" and self.text[self.i - 1] in " \t\n":
                break
            self.i += 1
        return resolve_plain(_fold_lines(self.text[start : self.i].strip(" \t\n"), escapes=False))

    def _sequence(self) -> list[Any]:
        self.i += 1
        out: list[Any] = []
        while True:
            if self._peek() == "]":
                self.i += 1
                return out
            item = self._node()
            if self._peek() == ":":
                self.i += 1
                item = {_key_text(item): self._node() if self._peek() not in ",]" else None}
            out.append(item)
            char = self._peek()
            if char == ",":
                self.i += 1
            elif char != "]":
                raise FrontmatterError(f"expected ',' or ']' in a flow sequence, got {char!r}")

    def _mapping(self) -> dict[str, Any]:
        self.i += 1
        out: dict[str, Any] = {}
        while True:
            if self._peek() == "}":
                self.i += 1
                return out
            key = _key_text(self._node())
            value: Any = None
            if self._peek() == ":":
                self.i += 1
                value = None if self._peek() in ",}" else self._node()
            if key in out:
                raise FrontmatterError(f"map keys must be unique ({key!r})")
            out[key] = value
            char = self._peek()
            if char == ",":
                self.i += 1
            elif char != "}":
                raise FrontmatterError(f"expected ',' or '}}' in a flow mapping, got {char!r}")
