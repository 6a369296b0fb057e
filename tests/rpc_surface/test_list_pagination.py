"""listSessions keyset pagination: stable order, no duplicates or gaps across pages."""

from __future__ import annotations

import pytest

from rpcd.protocol import types as t
from rpcd.wire.handlers import InvalidParamsError, _decode_cursor, paginate


def summary(n: int, updated: str, created: str | None = None) -> t.SessionSummary:
    return t.SessionSummary(
        session_id=f"id{n}",
        session_file=f"/s/{n:03}.jsonl",
        cwd="/p",
        title=f"t{n}",
        created_at=created if created is not None else updated,
        updated_at=updated,
        message_count=n,
    )


def walk(items: list[t.SessionSummary], limit: int, sort: t.SessionSort = "updated") -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = paginate(items, _decode_cursor(cursor, sort) if cursor else None, limit, sort)
        seen += [s.session_id for s in page.sessions]
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


def test_pages_cover_every_session_once_newest_first() -> None:
    items = [summary(n, f"2026-01-01T00:00:{n % 7:02}Z") for n in range(23)]
    seen = walk(items, 5)
    assert sorted(seen) == sorted(s.session_id for s in items)
    assert len(seen) == len(set(seen))
    expected = [s.session_id for s in sorted(items, key=lambda s: (s.updated_at, s.session_file), reverse=True)]
    assert seen == expected


def test_a_session_written_between_pages_does_not_shift_later_pages() -> None:
    items = [summary(n, f"2026-01-01T00:00:{n:02}Z") for n in range(10)]
    first = paginate(items, None, 4)
    items.append(summary(99, "2026-01-02T00:00:00Z"))  # newer than everything: lands before the cursor
    assert first.next_cursor is not None
    rest = paginate(items, _decode_cursor(first.next_cursor, "updated"), 100)
    assert [s.session_id for s in first.sessions + rest.sessions] == [f"id{n}" for n in range(9, -1, -1)]


def test_last_page_has_no_cursor_and_a_foreign_cursor_is_rejected() -> None:
    assert paginate([summary(1, "x")], None, 5).next_cursor is None
    with pytest.raises(InvalidParamsError):
        _decode_cursor("not-a-cursor", "updated")


def test_sorted_by_creation_pages_newest_created_first() -> None:
    # updated and created disagree: the created order is the reverse of the updated one
    items = [summary(n, f"2026-01-01T00:00:{n:02}.000Z", f"2025-01-01T00:00:{59 - n:02}.000Z") for n in range(12)]
    assert walk(items, 5, "created") == [f"id{n}" for n in range(12)]
    assert walk(items, 5, "updated") == [f"id{n}" for n in range(11, -1, -1)]


def test_a_cursor_of_one_sort_is_refused_for_the_other() -> None:
    items = [summary(n, f"2026-01-01T00:00:{n:02}.000Z") for n in range(6)]
    cursor = paginate(items, None, 2, "created").next_cursor
    assert cursor is not None
    with pytest.raises(InvalidParamsError) as refused:
        _decode_cursor(cursor, "updated")
    data = refused.value.error.data
    assert data is not None and "sort 'created'" in data.errors[0].message and data.errors[0].path == "$.cursor"
