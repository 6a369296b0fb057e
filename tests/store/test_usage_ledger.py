"""The day's usage ledger (``rpcd.store.usage_ledger``): lines every process appends, read back as
today's spend; the day's descriptor is kept between replies and opened again when it must be."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from rpcd.store import usage_ledger
from rpcd.store.usage_ledger import UsageLedger


def _lines(directory: Path) -> list[dict[str, object]]:
    return [json.loads(line) for path in sorted(directory.glob("*.jsonl")) for line in path.read_text().splitlines()]


def test_replies_of_several_ledgers_add_up_in_todays_file(tmp_path: Path) -> None:
    first, second = UsageLedger(str(tmp_path)), UsageLedger(str(tmp_path))
    first.record("a", 10, 0.5)
    second.record("b", 5, 0.25)
    first.record("a", 1, 0.0)
    first.record("a", 0, 0.0)  # nothing spent: no line
    assert first.today() == (16, 0.75) and second.today() == (16, 0.75)
    directory = tmp_path / "rpcd" / "usage"
    assert [(line["s"], line["tokens"]) for line in _lines(directory)] == [("a", 10), ("b", 5), ("a", 1)]
    assert oct(os.stat(directory).st_mode & 0o777) == "0o700"
    assert all(oct(path.stat().st_mode & 0o777) == "0o600" for path in directory.glob("*.jsonl"))


def test_a_reply_recorded_soon_is_written_at_the_loops_next_pass_and_counted_before_that(tmp_path: Path) -> None:
    directory = tmp_path / "rpcd" / "usage"

    async def main() -> None:
        ledger, other = UsageLedger(str(tmp_path)), UsageLedger(str(tmp_path))
        ledger.record_soon("a", 10, 0.5)
        ledger.record_soon("a", 2, 0.0)
        assert not directory.exists() or _lines(directory) == []  # not in the caller's step
        assert ledger.today() == (12, 0.5)  # a total asked for first writes it
        ledger.record_soon("a", 3, 0.0)
        await asyncio.sleep(0)
        assert other.today() == (15, 0.5)  # another process's view: on disk after one loop pass
        ledger.record_soon("a", 4, 0.0)
        ledger.close()  # the orderly end loses nothing
        assert [line["tokens"] for line in _lines(directory)] == [10, 2, 3, 4]

    asyncio.run(main())
    UsageLedger(str(tmp_path)).record_soon("b", 1, 0.0)  # no loop: at once
    assert [line["s"] for line in _lines(directory)][-1] == "b"


def test_a_removed_ledger_file_is_created_again_at_the_next_reply(tmp_path: Path) -> None:
    ledger = UsageLedger(str(tmp_path))
    ledger.record("a", 10, 0.5)
    for path in (tmp_path / "rpcd" / "usage").glob("*.jsonl"):
        path.unlink()
    ledger.record("a", 7, 0.1)
    assert [line["tokens"] for line in _lines(tmp_path / "rpcd" / "usage")] == [7]


def test_a_new_day_writes_a_new_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = UsageLedger(str(tmp_path))
    real_day = usage_ledger._day
    today = real_day()
    yesterday = real_day(time.time() - 86400)
    monkeypatch.setattr(usage_ledger, "_day", lambda moment=None: yesterday if moment is None else real_day(moment))
    ledger.record("a", 1, 0.0)
    monkeypatch.setattr(usage_ledger, "_day", real_day)
    ledger.record("a", 2, 0.0)
    names = sorted(path.name for path in (tmp_path / "rpcd" / "usage").glob("*.jsonl"))
    assert names == [f"{yesterday}.jsonl", f"{today}.jsonl"]
    assert ledger.today() == (2, 0.0)


def test_close_lets_go_of_the_descriptor_and_a_later_reply_opens_it_again(tmp_path: Path) -> None:
    ledger = UsageLedger(str(tmp_path))
    before = set(os.listdir("/proc/self/fd"))
    ledger.record("a", 1, 0.0)
    assert len(set(os.listdir("/proc/self/fd")) - before) == 1
    ledger.close()
    ledger.close()
    assert set(os.listdir("/proc/self/fd")) - before == set()
    ledger.record("a", 2, 0.0)
    assert ledger.today() == (3, 0.0)
    ledger.close()


def test_a_ledger_that_cannot_be_written_loses_the_line_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "rpcd").mkdir()
    (tmp_path / "rpcd" / "usage").write_text("a file where the directory must be")
    ledger = UsageLedger(str(tmp_path))
    ledger.record("a", 1, 0.0)  # best effort: no exception
    assert ledger.today() == (0, 0.0)


def test_a_reply_recorded_soon_before_midnight_keeps_its_day(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_day = usage_ledger._day
    yesterday = real_day(time.time() - 86400)

    async def main() -> None:
        ledger = UsageLedger(str(tmp_path))
        monkeypatch.setattr(usage_ledger, "_day", lambda moment=None: yesterday if moment is None else real_day(moment))
        ledger.record_soon("a", 3, 0.0)  # the last reply of a day ...
        monkeypatch.setattr(usage_ledger, "_day", real_day)
        ledger.flush()  # ... written after midnight
        assert ledger.today() == (0, 0.0)

    asyncio.run(main())
    assert [path.name for path in (tmp_path / "rpcd" / "usage").glob("*.jsonl")] == [f"{yesterday}.jsonl"]
