"""``$/progress`` begin/report/end for one token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from rpcd.wire.progress import Progress


def collect() -> tuple[list[dict[str, Any]], Any]:
    out: list[dict[str, Any]] = []

    def post(method: str, params: Mapping[str, Any]) -> None:
        assert method == "$/progress"
        out.append(dict(params))

    return out, post


def test_progress_sends_begin_report_end_with_the_token() -> None:
    out, post = collect()
    with Progress(post, "tok", "Resuming") as p:
        p.report("opened", 50)
    assert [o["value"]["kind"] for o in out] == ["begin", "report", "end"]
    assert {o["token"] for o in out} == {"tok"}
    assert out[0]["value"]["title"] == "Resuming"
    assert out[1]["value"]["percentage"] == 50


def test_without_a_token_nothing_is_sent() -> None:
    out, post = collect()
    with Progress(post, None, "Resuming") as p:
        p.report("x")
    assert out == []


def test_failure_still_ends_the_progress_once() -> None:
    out, post = collect()
    with pytest.raises(ValueError), Progress(post, 7, "Importing") as p:
        raise ValueError("boom")
    p.end()
    assert [o["value"]["kind"] for o in out] == ["begin", "end"]
    assert out[-1]["value"]["message"] == "failed"
