"""``sanitize_surrogates`` (pi-ai's ``sanitizeSurrogates``) runs on every message's text of every
request: its quick answers for text without surrogates must agree with the full scan on any text."""

from __future__ import annotations

import contextlib
import re

from hypothesis import given
from hypothesis import strategies as st

from rpcd.providers.transform import sanitize_surrogates

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _scanned(text: str) -> str:
    """The scan every text used to take (pairs split over two code points joined, the rest dropped)."""
    if not _SURROGATE.search(text):
        return text
    with contextlib.suppress(UnicodeError):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return _SURROGATE.sub("", text)


_PIECES = st.one_of(
    st.text(max_size=40),  # any code point but surrogates
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=3),
    st.sampled_from(["\ud83d\ude00", "\ud83d", "\ude00", "é", "漢字", "\U0001f600", "\uffff"]),
)


@given(st.lists(_PIECES, max_size=12).map("".join))
def test_any_text_comes_out_as_the_full_scan_gives_it(text: str) -> None:
    assert sanitize_surrogates(text) == _scanned(text)


def test_text_without_surrogates_is_returned_as_it_is() -> None:
    for text in ("plain ascii", "naïve café – 漢字 ✓", "\U0001f600 emoji", ""):
        assert sanitize_surrogates(text) is text


def test_a_split_pair_is_joined_and_a_lone_surrogate_dropped() -> None:
    text = "emoji \ud83d\ude00 and a lone \ud800 surrogate"
    assert sanitize_surrogates(text) == "emoji \U0001f600 and a lone  surrogate"
