"""Manual ``compact``: Pi's result, entry, events and context; what it refuses; abort and failure
leave the session exactly as it was and usable; ``session_before_compact`` / ``session_compact``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.core.errors import CompactionCancelledError, CompactionError
from rpcd.runtime.compaction.prompts import SUMMARIZATION_SYSTEM_PROMPT, UPDATE_SUMMARIZATION_PROMPT
from rpcd.runtime.compaction.tokens import estimate_tokens
from rpcd.store import SessionManager
from tests.runtime.compaction._world import KEEP, until, world

pytestmark = pytest.mark.anyio


async def test_compact_writes_pis_entry_and_answers_pis_result(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        await w.long_turns(5)
        w.faux.push({"text": "## Goal\nship it"})
        result = await w.session.compact("focus on the answers")
        entries = w.file_entries()
        compaction = entries[-1]
        assert list(compaction) == ["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId",
                                    "tokensBefore", "details", "usage", "fromHook"]
        assert compaction["summary"] == "## Goal\nship it" and compaction["fromHook"] is False
        assert compaction["details"] == {"readFiles": [], "modifiedFiles": []}
        assert result == {"summary": compaction["summary"], "firstKeptEntryId": compaction["firstKeptEntryId"],
                          "tokensBefore": compaction["tokensBefore"],
                          "estimatedTokensAfter": sum(estimate_tokens(m) for m in w.session.messages()),
                          "usage": compaction["usage"], "details": compaction["details"]}
        kept = next(e for e in entries if e["id"] == result["firstKeptEntryId"])
        assert kept["type"] == "message" and kept["message"]["role"] == "user"
        # the context is the summary, then the kept messages (what a resume of the file builds)
        context = SessionManager.open(str(w.session.session_file)).build_session_context().messages
        assert w.session.messages() == context
        assert context[0]["role"] == "compactionSummary" and context[1]["timestamp"] == kept["message"]["timestamp"]
        assert sum(estimate_tokens(m) for m in context[1:]) >= KEEP
        start, end = w.of("compaction_start"), w.of("compaction_end")
        assert start == [{"type": "compaction_start", "reason": "manual"}]
        assert end == [{"type": "compaction_end", "reason": "manual", "result": result, "aborted": False,
                        "willRetry": False}]
        assert w.session.state().is_compacting is False
    finally:
        await w.close()


async def test_the_next_compaction_carries_the_previous_summary(tmp_path: Path) -> None:
    seen: list[Any] = []
    w = await world(tmp_path)
    original = w.faux.stream

    async def spy(request: Any) -> Any:
        seen.append(request)
        async for event in original(request):
            yield event

    w.faux.stream = spy  # type: ignore[method-assign]
    try:
        await w.long_turns(4)
        w.faux.push({"text": "first summary"})
        await w.session.compact()
        await w.long_turns(4)
        w.faux.push({"text": "second summary"})
        await w.session.compact()
        summary_request = seen[-1]
        assert summary_request.system_prompt == SUMMARIZATION_SYSTEM_PROMPT
        text = summary_request.messages[0]["content"][0]["text"]
        assert "<previous-summary>\nfirst summary\n</previous-summary>" in text
        assert text.endswith(UPDATE_SUMMARIZATION_PROMPT)
        assert summary_request.cache_retention == "none" and summary_request.max_tokens == int(0.8 * 2_000)
        assert summary_request.session_id != w.session.session_id
        assert w.session.messages()[0]["summary"] == "second summary"
    finally:
        await w.close()


async def test_nothing_to_compact_and_already_compacted_are_errors_with_events(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        with pytest.raises(CompactionError, match=r"Nothing to compact \(session too small\)"):
            await w.session.compact()
        await w.long_turns(5)
        w.faux.push({"text": "summary"})
        await w.session.compact()
        with pytest.raises(CompactionError, match="Already compacted"):
            await w.session.compact()
        failures = [e for e in w.of("compaction_end") if not e.get("result")]
        assert [e["errorMessage"] for e in failures] == ["Compaction failed: Nothing to compact (session too small)",
                                                          "Compaction failed: Already compacted"]
    finally:
        await w.close()


async def test_a_failed_summary_writes_nothing_and_the_session_stays_usable(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        await w.long_turns(5)
        before = w.file_bytes()
        messages = w.session.messages()
        w.faux.push({"text": "", "stopReason": "error", "errorMessage": "quota exceeded"},
                    {"text": "half a summ", "stopReason": "length"})
        for expected in ("Summarization failed: quota exceeded",
                         "Summarization failed: generation hit the token cap and the summary is incomplete"):
            with pytest.raises(CompactionError, match=expected):
                await w.session.compact()
            assert w.file_bytes() == before
            assert w.session.messages() == messages
            assert w.of("compaction_end")[-1]["errorMessage"] == f"Compaction failed: {expected}"
        w.faux.push({"text": "still here"})
        assert await w.session.prompt("hello?") == "stop"
    finally:
        await w.close()


async def test_abort_during_the_summary_leaves_the_session_exactly_as_before(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        await w.long_turns(5)
        before = w.file_bytes()
        messages = w.session.messages()
        w.faux.push({"text": "a slow summary " * 50, "chunkSize": 4, "chunkDelay": 0.02})
        outcome: list[BaseException] = []

        async def compact() -> None:
            try:
                await w.session.compact()
            except CompactionError as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(compact)
            await until(lambda: w.session.state().is_compacting)
            await anyio.sleep(0.05)
            await w.session.abort()
        assert isinstance(outcome[0], CompactionCancelledError)
        assert w.file_bytes() == before
        assert w.session.messages() == messages
        assert w.of("compaction_end")[-1] == {"type": "compaction_end", "reason": "manual", "aborted": True,
                                               "willRetry": False}
        assert w.session.state().is_compacting is False
    finally:
        await w.close()


async def test_compact_aborts_a_running_turn_first(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        await w.long_turns(5)
        w.faux.push({"text": "slow " * 200, "chunkSize": 2, "chunkDelay": 0.01}, {"text": "summary"})
        reasons: list[str] = []

        async def prompt() -> None:
            reasons.append(await w.session.prompt("a long answer please"))

        async with anyio.create_task_group() as group:
            group.start_soon(prompt)
            await until(lambda: any(e["type"] == "message_update" for e in w.events[-3:]))
            result = await w.session.compact()
        assert reasons == ["aborted"] and result["summary"] == "summary"
        assert w.file_entries()[-1]["type"] == "compaction"
    finally:
        await w.close()


EXTENSION = """
CALLS = []

def register(pi):
    def before(event, ctx):
        CALLS.append(("before", event["reason"], event["willRetry"], event.get("customInstructions"),
                      event["preparation"]["firstKeptEntryId"], len(event["branchEntries"])))
        mode = MODE[0]
        if mode == "cancel":
            return {"cancel": True}
        if mode == "supply":
            return {"compaction": {"summary": "from the extension", "tokensBefore": 7,
                                   "firstKeptEntryId": event["preparation"]["firstKeptEntryId"],
                                   "details": {"mine": True}}}

    def after(event, ctx):
        CALLS.append(("compact", event["compactionEntry"]["summary"], event["fromExtension"], event["reason"]))

    def failed(event, ctx):
        CALLS.append(("failed", event["reason"], event["aborted"], event.get("errorMessage")))

    pi.on("session_before_compact", before)
    pi.on("session_compact", after)
    pi.on("session_compact_failed", failed)

MODE = ["default"]
"""


def _extension_module() -> Any:
    return next(m for name, m in sys.modules.items() if name.startswith("rpcd_extension_") and hasattr(m, "MODE"))


async def test_extensions_cancel_or_supply_the_compaction(tmp_path: Path) -> None:
    w = await world(tmp_path, extension=EXTENSION)
    try:
        await w.long_turns(5)
        module = _extension_module()
        module.MODE[0] = "cancel"
        with pytest.raises(CompactionCancelledError):
            await w.session.compact("mine")
        assert w.file_entries()[-1]["type"] == "message"
        module.MODE[0] = "supply"
        result = await w.session.compact()
        entry = w.file_entries()[-1]
        assert (entry["summary"], entry["tokensBefore"], entry["details"], entry["fromHook"]) == (
            "from the extension", 7, {"mine": True}, True)
        assert "usage" not in entry and result["summary"] == "from the extension"
        kinds = [c[0] for c in module.CALLS]
        assert kinds == ["before", "failed", "before", "compact"]
        assert module.CALLS[0][1:4] == ("manual", False, "mine")
        assert module.CALLS[1] == ("failed", "manual", True, None)
        assert module.CALLS[3] == ("compact", "from the extension", True, "manual")
        assert json.loads(json.dumps(result)) == result
    finally:
        await w.close()


async def test_a_transient_summary_failure_is_retried_with_the_retry_settings(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        await w.long_turns(5)
        w.faux.push({"text": "", "stopReason": "error", "errorMessage": "529 overloaded_error: Overloaded"},
                    {"text": "the summary"})
        result = await w.session.compact()
        assert result["summary"] == "the summary"
        retry = [e for e in w.events if e["type"].startswith("summarization_retry")]
        assert retry == [
            {"type": "summarization_retry_scheduled", "attempt": 1, "maxAttempts": 3, "delayMs": 1,
             "errorMessage": "529 overloaded_error: Overloaded"},
            {"type": "summarization_retry_attempt_start", "source": "compaction", "reason": "manual"},
            {"type": "summarization_retry_finished"},
        ]
    finally:
        await w.close()
