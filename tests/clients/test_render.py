"""Human output helpers: the progress display and the event labels a first-time user reads."""

from __future__ import annotations

import io

from clients import render


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_updates_one_line_in_place_on_a_terminal() -> None:
    out = Terminal()
    display = render.ProgressDisplay(out)
    display({"kind": "begin", "title": "Importing", "percentage": 0})
    display({"kind": "report", "percentage": 50, "message": "half"})
    display({"kind": "end"})
    assert out.getvalue() == "\r\x1b[KImporting   0%\r\x1b[KImporting  50% half\r\x1b[KImporting done\n"


def test_progress_off_a_terminal_prints_only_begin_and_end_lines() -> None:
    out = io.StringIO()
    display = render.ProgressDisplay(out)
    for value in ({"kind": "begin", "title": "Resuming"}, {"kind": "report", "percentage": 10}, {"kind": "end"}):
        display(value)
    assert out.getvalue() == "Resuming ...\nResuming ... done\n"


def test_event_labels_carry_generation_and_seq() -> None:
    event = {"sessionId": "s", "generation": 2, "seq": 7, "event": {"type": "turn_end"}}
    lifecycle = {"sessionId": "s", "generation": 2, "seq": 1, "event": {"type": "session_start", "reason": "fork"}}
    assert render.event_line("session/event", event) == "[event g2#7] turn_end"
    assert render.event_line("session/lifecycle", lifecycle) == '[lifecycle g2#1] session_start {"reason": "fork"}'
    empty = {"operation": "fork", "generation": 2, "cwd": "/p", "diagnostics": []}
    assert render.event_line("session/diagnostics", empty) == "[diagnostics g2] fork: nothing to report"
