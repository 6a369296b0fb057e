"""Automatic compaction where Pi checks it: after a run (threshold), between tool rounds, before a
prompt; overflow recovery (compact, retry the turn once); the setting and ``setAutoCompaction``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rpcd.core.errors import CompactionError
from rpcd.core.values import LimitOverrides
from tests.runtime.compaction._world import WINDOW, faux_model, world

pytestmark = pytest.mark.anyio

OVERFLOW = "prompt is too long: 9000 tokens > 8000 maximum"


async def test_a_run_that_crosses_the_threshold_is_compacted_after_it(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        await w.long_turns(16)  # below the threshold (6000 of 8000) all along
        assert not w.of("compaction_start")
        w.faux.push({"text": "big " + "y" * 4_000}, {"text": "the summary"})
        assert await w.session.prompt("one more") == "stop"
        assert w.of("compaction_start") == [{"type": "compaction_start", "reason": "threshold"}]
        end = w.of("compaction_end")[0]
        assert (end["reason"], end["aborted"], end["willRetry"]) == ("threshold", False, False)
        order = w.types("agent_end", "compaction_start", "compaction_end", "agent_settled")
        assert order[-4:] == ["agent_end", "compaction_start", "compaction_end", "agent_settled"]
        assert w.file_entries()[-1]["type"] == "compaction"
        first = w.session.messages()[0]
        assert first["role"] == "compactionSummary"
        # the big reply alone is over keepRecentTokens: a split turn, its prefix summarized apart
        assert first["summary"].startswith("the summary\n\n---\n\n**Turn Context (split turn):**\n\n")
        # the next turn's own usage is post-compaction: no compaction loop
        w.faux.push({"text": "short"})
        await w.session.prompt("and now?")
        assert len(w.of("compaction_start")) == 1
    finally:
        await w.close()


async def test_compaction_between_tool_rounds_before_the_next_model_call(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        (w.project / "big.txt").write_text("line of the big file\n" * 95)  # ~500 tokens, less than kept
        await w.long_turns(16)
        w.faux.push({"toolCall": {"name": "read", "arguments": {"path": "big.txt"}}},
                    {"text": "summary of it all"},
                    {"text": "the turn so far"},  # the cut splits the current turn: its prefix too
                    {"text": "done reading"})
        assert await w.session.prompt("read big.txt") == "stop"
        order = w.types("turn_end", "turn_start", "compaction_start", "compaction_end", "agent_end")
        assert order[-6:] == ["turn_end", "compaction_start", "compaction_end", "turn_start", "turn_end", "agent_end"]
        assert w.of("compaction_start")[-1]["reason"] == "threshold"
        roles = [m["role"] for m in w.session.messages()]
        # the call and its result stay together in the kept part; the model answered on the compacted context
        assert roles[0] == "compactionSummary" and roles[-3:] == ["assistant", "toolResult", "assistant"]
        assert w.session.messages()[-1]["content"][0]["text"] == "done reading"
    finally:
        await w.close()


async def test_a_prompt_checks_the_threshold_first(tmp_path: Path) -> None:
    w = await world(tmp_path, settings={"compaction": {"enabled": False, "reserveTokens": 2_000,
                                                        "keepRecentTokens": 700}})
    try:
        await w.long_turns(18)  # over the threshold, but auto-compaction is off
        assert not w.of("compaction_start") and w.session.state().auto_compaction_enabled is False
        w.session.set_auto_compaction(True)
        assert w.session.state().auto_compaction_enabled is True
        w.faux.push({"text": "summary"}, {"text": "answer"})
        await w.session.prompt("next")
        kinds = w.types("compaction_start", "message_start")
        assert kinds[-3:] == ["compaction_start", "message_start", "message_start"]  # before the user message
    finally:
        await w.close()


async def test_an_overflow_is_compacted_and_the_turn_retried_once(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        await w.long_turns(6)
        w.faux.push({"text": "", "stopReason": "error", "errorMessage": OVERFLOW},
                    {"text": "the summary"},
                    {"text": "answered after compaction"})
        assert await w.session.prompt("overflowing question") == "stop"
        print(w.types()[-12:], w.of("compaction_end"), w.faux.pending())
        end = w.of("compaction_end")[-1]
        assert (end["reason"], end["willRetry"], end["aborted"]) == ("overflow", True, False)
        assert w.of("compaction_start")[-1] == {"type": "compaction_start", "reason": "overflow"}
        entries = w.file_entries()
        failed = [e for e in entries if e["type"] == "message" and e["message"].get("stopReason") == "error"]
        assert failed and failed[0]["message"]["errorMessage"] == OVERFLOW  # kept in the file ...
        assert not any(m.get("stopReason") == "error" for m in w.session.messages())  # ... not in the context
        assert w.session.messages()[-1]["content"][0]["text"] == "answered after compaction"
        assert w.types("agent_start").count("agent_start") == 6 + 2  # the retry is a continued run
        assert w.session.last_context_overflow is None
    finally:
        await w.close()


@pytest.fixture
def replies_after_the_compaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """The faux provider can start a reply in the very millisecond the compaction entry before it
    was written; Pi's rule (``timestamp <= compaction``) then reads the reply as older than the
    compaction and skips it, in Pi as here. A real provider never answers within a millisecond:
    stamp faux replies 2 ms later so the test sees the order it means."""
    from rpcd.providers import base, faux

    def later(*args: Any, **kwargs: Any) -> dict[str, Any]:
        message = base.new_assistant_message(*args, **kwargs)
        message["timestamp"] += 2
        return message

    monkeypatch.setattr(faux, "new_assistant_message", later)


@pytest.mark.usefixtures("replies_after_the_compaction")
async def test_a_second_overflow_after_recovery_is_reported_not_retried_again(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        await w.long_turns(6)
        w.faux.push({"text": "", "stopReason": "error", "errorMessage": OVERFLOW},
                    {"text": "the summary"},
                    {"text": "", "stopReason": "error", "errorMessage": OVERFLOW})
        assert await w.session.prompt("overflowing question") == "error"
        last = w.of("compaction_end")[-1]
        assert last == {"type": "compaction_end", "reason": "overflow", "aborted": False, "willRetry": False,
                        "errorMessage": "Context overflow recovery failed after one compact-and-retry attempt. "
                                        "Try reducing context or switching to a larger-context model."}
        assert w.session.last_context_overflow is not None
        assert w.session.last_context_overflow.reason == "error"
        # a new prompt may recover again
        w.faux.push({"text": "fine now"})
        assert await w.session.prompt("again") == "stop"
    finally:
        await w.close()


async def test_a_failed_automatic_compaction_is_an_event_and_the_run_ends_normally(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        await w.long_turns(16)
        w.faux.push({"text": "big " + "y" * 4_000}, {"text": "", "stopReason": "error", "errorMessage": "boom"})
        assert await w.session.prompt("one more") == "stop"
        assert w.of("compaction_end")[-1]["errorMessage"] == "Auto-compaction failed: Summarization failed: boom"
        assert not any(e["type"] == "compaction" for e in w.file_entries())
        assert w.types()[-1] == "agent_settled"
    finally:
        await w.close()


async def test_an_overflow_from_another_model_is_not_recovered(tmp_path: Path) -> None:
    faux = faux_model()
    w = await world(tmp_path, faux=faux)
    try:
        await w.long_turns(3)
        stale = dict(w.session.agent.messages[-1], stopReason="error", errorMessage=OVERFLOW, model="other")
        w.session.agent.messages[-1] = stale
        assert await w.session.compaction.check(stale) is False
        assert not w.of("compaction_start")
        assert w.session.agent.model.context_window == WINDOW
    finally:
        await w.close()


async def test_set_auto_compaction_holds_across_replacements(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        w.session.set_auto_compaction(False)
        await w.runtime.new_session()
        assert w.runtime.session.state().auto_compaction_enabled is False
        w.runtime.session.set_auto_compaction(True)
        await w.runtime.new_session()
        assert w.runtime.session.state().auto_compaction_enabled is True
    finally:
        await w.close()


async def test_an_automatic_compaction_at_a_spending_cap_never_calls_the_model(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        await w.long_turns(16)
        state = w.session.set_limits(LimitOverrides(max_tokens=10**9))  # what was spent so far
        assert state is not None and state.tokens > 0
        w.session.set_limits(LimitOverrides(max_tokens=state.tokens + 1))  # one more call may go, not two
        w.faux.push({"text": "big " + "y" * 4_000}, {"text": "a summary the cap must keep from being asked for"})
        assert await w.session.prompt("one more") == "stop"  # under the cap when asked; over it after
        assert not w.of("compaction_start")  # the threshold was crossed, but a summary is a model call
        assert w.faux.pending() == 1 and not any(e["type"] == "compaction" for e in w.file_entries())
        assert w.types()[-1] == "agent_settled"
        assert await w.session.prompt("and now?") == "limit"  # nor before the next prompt
        assert not w.of("compaction_start") and w.faux.pending() == 1
        with pytest.raises(CompactionError, match="Spending cap maxTokens reached"):
            await w.session.compact()
    finally:
        await w.close()
