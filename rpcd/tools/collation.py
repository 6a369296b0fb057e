"""``a.toLowerCase().localeCompare(b.toLowerCase())`` as Node (ICU, root collation) orders names.

ICU sorts punctuation and symbols before digits and digits before letters, and compares base
letters before accents (``a`` < ``ä`` < ``b``). The ASCII order below is ICU's, measured with
Node 22; other characters fall back to their NFD base letter plus accents, then code point,
which agrees with ICU for Latin text (see ``docs/pi-compat.md``).
"""

from __future__ import annotations

import functools
import unicodedata

# Printable ASCII in ICU root order (upper and lower case share a primary weight).
_ICU_ASCII_ORDER = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ"
_PRIMARY: dict[str, int] = {}
for _index, _char in enumerate(_ICU_ASCII_ORDER):
    _PRIMARY.setdefault(_char.lower(), len({c.lower() for c in _ICU_ASCII_ORDER[:_index]} - {_char.lower()}))
_PRIMARY.update({c.upper(): _PRIMARY[c] for c in "abcdefghijklmnopqrstuvwxyz"})
_AFTER_ASCII = 1000


def _char_weights(char: str) -> tuple[list[int], list[int]]:
    if char in _PRIMARY:
        return [_PRIMARY[char]], [0]
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        return [], []  # control characters are ignorable
    if char == "ß":
        return [_PRIMARY["s"], _PRIMARY["s"]], [0, 1]
    decomposed = unicodedata.normalize("NFD", char)
    base = decomposed[0]
    if base in _PRIMARY and len(decomposed) > 1:
        accents = [ord(c) for c in decomposed[1:]]
        return [_PRIMARY[base]], [sum(accents)]
    if unicodedata.category(char).startswith("Z"):
        return [_PRIMARY[" "]], [0]
    return [_AFTER_ASCII + code], [0]


@functools.lru_cache(maxsize=65536)
def _key(text: str) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    primary: list[int] = []
    secondary: list[int] = []
    for char in text:
        p, s = _char_weights(char)
        primary.extend(p)
        secondary.extend(s)
    return tuple(primary), tuple(secondary), text


def locale_key(name: str) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    """A sort key ordering names as Pi's ``ls`` does (case-insensitive ``localeCompare``)."""
    return _key(name.lower())
