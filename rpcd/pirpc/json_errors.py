"""What ``JSON.parse`` says about a line it refuses, word for word: Node 22's V8 messages.

Pi's RPC mode answers a line that is not JSON with ``Failed to parse command: <the SyntaxError's
message>``; a client may show or match that text, so this front says the same. The messages and
the positions they name are V8's JSON parser's (``src/json/json-parser.cc``): one scan over the
line's UTF-16 code units that stops where V8 stops and reports what V8 reports there. It is only
run on a line the parser already refused (``rpcd.core.codec.loads``); the differential test
(``tests/pirpc/test_json_errors.py``) holds it against Node's own ``JSON.parse``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["parse_error_message"]

_MAX_CONTEXT: Final = 10
"""V8's ``kMaxContextCharacters``: characters of the source shown on each side of a bad token."""
_MIN_LENGTH_FOR_CONTEXT: Final = 2 * _MAX_CONTEXT + 1
_SPECIAL: Final = frozenset({"[object Object]", "undefined", "Infinity", "NaN"})
_WHITESPACE: Final = frozenset({0x20, 0x09, 0x0A, 0x0D})
_SELF_ESCAPES: Final = frozenset(map(ord, '"\\/bfnrt'))
_HEX: Final = frozenset(map(ord, "0123456789abcdefABCDEF"))
_NUMBER_PART: Final = frozenset(map(ord, "0123456789.eE-+"))
_END: Final = -1
_AT: Final = " at position {pos} (line {line} column {column})"


class _Refused(Exception):
    def __init__(self, message: str) -> None:
        self.message = message


def _digit(unit: int) -> bool:
    return 0x30 <= unit <= 0x39


class _Scanner:
    """V8's ``JsonParser`` over the code units of one source, reporting its first error."""

    def __init__(self, text: str) -> None:
        data = text.encode("utf-16-le", "surrogatepass")
        self.units = [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]
        self.end = len(self.units)
        self.pos = 0

    # -- V8's cursor -----------------------------------------------------------------------------------

    def current(self) -> int:
        return self.units[self.pos] if self.pos < self.end else _END

    def next(self) -> int:
        self.pos += 1
        return self.current()

    def skip_whitespace(self) -> None:
        while self.pos < self.end and self.units[self.pos] in _WHITESPACE:
            self.pos += 1

    def token(self) -> str:
        """``peek()``: the kind of token at the cursor."""
        unit = self.current()
        if unit == _END:
            return "EOS"
        if unit == 0x22:
            return "STRING"
        if unit == 0x2D or _digit(unit):
            return "NUMBER"
        return {0x7B: "{", 0x7D: "}", 0x5B: "[", 0x5D: "]", 0x3A: ":", 0x2C: ",", 0x74: "t", 0x66: "f",
                0x6E: "n"}.get(unit, "ILLEGAL")

    # -- reporting (``ReportUnexpectedToken``) ---------------------------------------------------------

    def at(self, message: str) -> _Refused:
        line, last_break, i = 1, 0, 0
        while i < self.pos:
            unit = self.units[i]
            if unit == 0x0D and i < self.pos - 1 and self.units[i + 1] == 0x0A:
                i += 1
                unit = 0x0A
            if unit in (0x0D, 0x0A):
                line += 1
                last_break = i + 1
            i += 1
        column = 1 + i - last_break
        return _Refused(message + _AT.format(pos=self.pos, line=line, column=column))

    def unexpected(self, token: str | None = None) -> _Refused:
        """``ReportUnexpectedToken(token)`` without a message of its own: V8's lookup by token."""
        token = self.token() if token is None else token
        if token == "EOS":
            return _Refused("Unexpected end of JSON input")
        if token == "NUMBER":
            return self.at("Unexpected number in JSON")
        if token == "STRING":
            return self.at("Unexpected string in JSON")
        source = self._slice(0, self.end)
        if source in _SPECIAL:
            return _Refused(f'"{source}" is not valid JSON')
        char = self._slice(self.pos, self.pos + 1)
        length, pos = self.end, self.pos
        if length < _MIN_LENGTH_FOR_CONTEXT:
            return _Refused(f"Unexpected token '{char}', \"{source}\" is not valid JSON")
        if pos < _MAX_CONTEXT:
            return _Refused(f"Unexpected token '{char}', \"{self._slice(0, pos + _MAX_CONTEXT)}\"... is not valid JSON")
        if pos < length - _MAX_CONTEXT:
            context = self._slice(pos - _MAX_CONTEXT, pos + _MAX_CONTEXT)
            return _Refused(f"Unexpected token '{char}', ...\"{context}\"... is not valid JSON")
        tail = self._slice(pos - _MAX_CONTEXT, length)
        return _Refused(f"Unexpected token '{char}', ...\"{tail}\" is not valid JSON")

    def unexpected_character(self, unit: int) -> _Refused:
        """``ReportUnexpectedCharacter``: the token that character would start."""
        if unit == _END:
            return self.unexpected("EOS")
        return self.unexpected(self.token() if unit <= 0x7F else "ILLEGAL")

    def _slice(self, start: int, stop: int) -> str:
        """Code units ``start:stop`` as a string (a lone surrogate stays one, as in V8's message)."""
        data = b"".join(unit.to_bytes(2, "little") for unit in self.units[start:stop])
        return data.decode("utf-16-le", "surrogatepass")

    # -- the grammar (``ParseJsonValue``, iteratively, as V8 does) -------------------------------------

    def parse(self) -> None:
        stack: list[str] = []  # "object" | "array"
        while True:
            # produce a value
            while True:
                self.skip_whitespace()
                token = self.token()
                if token == "STRING":
                    self.string()
                elif token == "NUMBER":
                    self.number()
                elif token == "{":
                    self.pos += 1
                    if self.check("}"):
                        break
                    stack.append("object")
                    self.expect_next("STRING", "Expected property name or '}' in JSON")
                    self.string(consumed=True)
                    self.expect_next(":", "Expected ':' after property name in JSON")
                    continue
                elif token == "[":
                    self.pos += 1
                    if self.check("]"):
                        break
                    stack.append("array")
                    continue
                elif token in ("t", "f", "n"):
                    self.literal({"t": "true", "f": "false", "n": "null"}[token])
                else:
                    raise self.unexpected_character(self.current())
                break
            # consume continuations
            while True:
                if not stack:
                    if not self.check("EOS"):
                        raise self.at("Unexpected non-whitespace character after JSON")
                    return
                if stack[-1] == "object":
                    if self.check(","):
                        self.expect_next("STRING", "Expected double-quoted property name in JSON")
                        self.string(consumed=True)
                        self.expect_next(":", "Expected ':' after property name in JSON")
                        break
                    if not self.token() == "}":
                        raise self.at("Expected ',' or '}' after property value in JSON")
                    self.pos += 1
                    stack.pop()
                    continue
                if self.check(","):
                    break
                if not self.token() == "]":
                    raise self.at("Expected ',' or ']' after array element in JSON")
                self.pos += 1
                stack.pop()

    def check(self, token: str) -> bool:
        self.skip_whitespace()
        if self.token() == token:
            if token != "EOS":
                self.pos += 1
            return True
        return False

    def expect_next(self, token: str, message: str) -> None:
        self.skip_whitespace()
        if self.token() != token:
            raise self.at(message)
        if token != "STRING":
            self.pos += 1

    def literal(self, word: str) -> None:
        """``ScanLiteral``: the rest of ``true``/``false``/``null``."""
        remaining = self.end - self.pos
        expected = [ord(c) for c in word]
        if remaining >= len(word) and self.units[self.pos:self.pos + len(word)] == expected:
            self.pos += len(word)
            return
        self.pos += 1
        for i in range(min(len(word) - 1, remaining - 1)):
            if expected[1 + i] != self.units[self.pos]:
                raise self.unexpected_character(self.units[self.pos])
            self.pos += 1
        raise self.unexpected("EOS")

    def string(self, consumed: bool = False) -> None:
        """``ScanJsonString`` from the opening quote (the cursor is on it)."""
        self.pos += 1
        while True:
            while self.pos < self.end and self.units[self.pos] >= 0x20 and self.units[self.pos] not in (0x22, 0x5C):
                self.pos += 1
            if self.pos >= self.end:
                raise self.at("Unterminated string in JSON")
            unit = self.units[self.pos]
            if unit == 0x22:
                self.pos += 1
                return
            if unit == 0x5C:
                escaped = self.next()
                if escaped == _END or escaped > 0xFF:
                    raise self.unexpected_character(escaped)
                if escaped == 0x75:  # \uXXXX
                    for _ in range(4):
                        if self.next() not in _HEX:
                            raise self.at("Bad Unicode escape in JSON")
                elif escaped not in _SELF_ESCAPES:
                    raise self.at("Bad escaped character in JSON")
                self.pos += 1
                continue
            raise self.at("Bad control character in string literal in JSON")

    def number(self) -> None:
        """``ParseJsonNumber``."""
        negative = False
        unit = self.current()
        if unit == 0x2D:
            negative = True
            unit = self.next()
        if unit == 0x30:
            unit = self.next()
            if unit in _NUMBER_PART:
                if _digit(unit):
                    raise self.unexpected("NUMBER")
            elif not negative:
                return
        else:
            start = self.pos
            while self.pos < self.end and _digit(self.units[self.pos]):
                self.pos += 1
            if self.pos == start:
                raise self.at("No number after minus sign in JSON")
            if self.current() not in _NUMBER_PART:
                return
        if self.current() == 0x2E:
            if not _digit(self.next()):
                raise self.at("Unterminated fractional number in JSON")
            while _digit(self.current()):
                self.pos += 1
        if self.current() in (0x65, 0x45):
            unit = self.next()
            if unit in (0x2B, 0x2D):
                unit = self.next()
            if not _digit(unit):
                raise self.at("Exponent part is missing a number in JSON")
            while _digit(self.current()):
                self.pos += 1


def parse_error_message(text: str) -> str:
    """The message of the ``SyntaxError`` ``JSON.parse(text)`` throws (``text`` must be one it refuses;
    for one it accepts, the message of a refusal of the whole text is returned all the same)."""
    scanner = _Scanner(text)
    try:
        scanner.parse()
    except _Refused as refused:
        return refused.message
    return "Unexpected end of JSON input"
