"""Entry ids and timestamps in the shapes Pi writes (``randomUUID().slice(0, 8)``,
``new Date().toISOString()``): part of the on-disk contract."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from rpcd.store import _ids


def test_an_entry_id_is_eight_lowercase_hex_digits_not_among_the_taken() -> None:
    ids = {_ids.new_entry_id(()) for _ in range(2000)}
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids)
    assert len(ids) > 1990  # 32 random bits each: a repeat among 2,000 is rare (p ~ 5e-4)
    taken = set(ids)
    assert _ids.new_entry_id(taken) not in taken


def test_now_is_javascripts_iso_string_of_the_clock() -> None:
    before = datetime.now(UTC)
    text = _ids.iso_now()
    after = datetime.now(UTC)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text)
    moment = _ids.parse_iso(text)
    assert moment is not None
    assert before - timedelta(milliseconds=1) < moment <= after


@given(st.integers(min_value=0, max_value=253402300799999))  # 1970 .. 9999-12-31T23:59:59.999Z
def test_now_formats_every_millisecond_as_format_iso_does(ms: int) -> None:
    real = time.time_ns
    try:
        time.time_ns = lambda: ms * 1_000_000 + 999_999  # type: ignore[assignment]  # the ms is floored
        text = _ids.iso_now()
    finally:
        time.time_ns = real  # type: ignore[assignment]
    assert text == _ids.format_iso(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms))
