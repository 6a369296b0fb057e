"""Human output helpers: the progress display and the event labels a first-time user reads."""

from __future__ import annotations

import io

from rpcd.clients import render


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


def test_failed_turns_retries_and_extension_errors_say_why() -> None:
    def line(event: dict[str, object]) -> str | None:
        return render.event_line("session/event", {"sessionId": "s", "generation": 1, "seq": 9, "event": event})

    failed = {"type": "message_end", "message": {"role": "assistant", "stopReason": "error",
                                                  "errorMessage": "provider local rejected the API key (401)"}}
    assert line(failed) == "[event g1#9] message_end assistant (error: provider local rejected the API key (401))"
    retry = {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "HTTP 503"}
    assert line(retry) == "[event g1#9] auto_retry_start attempt 1/3 in 2000 ms: HTTP 503"
    assert line({"type": "auto_retry_end", "success": False, "finalError": "Retry cancelled"}) == (
        "[event g1#9] auto_retry_end gave up: Retry cancelled"
    )
    ok = {"type": "message_end", "message": {"role": "assistant", "stopReason": "stop"}}
    assert line(ok) == "[event g1#9] message_end assistant"


def test_a_human_sees_why_a_turn_failed_without_verbose() -> None:
    from rpcd.clients.output import _worth_showing

    def shown(event: dict[str, object]) -> bool:
        return _worth_showing("session/event", {"event": event})

    # the reason of a failed turn is said once, at its end (render.turn_failure), not as an event line
    assert not shown({"type": "message_end", "message": {"role": "assistant", "stopReason": "error"}})
    assert render.turn_failure({"stopReason": "error", "errorMessage": "401 invalid x-api-key"}) == (
        "error: the turn failed: 401 invalid x-api-key")
    assert shown({"type": "auto_retry_start"}) and shown({"type": "extension_error"})
    assert not shown({"type": "message_end", "message": {"role": "assistant", "stopReason": "stop"}})
    assert not shown({"type": "turn_end"})


def test_progress_that_failed_never_says_done() -> None:
    for out in (Terminal(), io.StringIO()):
        display = render.ProgressDisplay(out)
        display({"kind": "begin", "title": "Resuming"})
        display({"kind": "end", "message": "failed"})
        assert "done" not in out.getvalue() and out.getvalue().rstrip().endswith("Resuming ... failed"
                                                                                   if not out.isatty() else
                                                                                   "Resuming failed")
