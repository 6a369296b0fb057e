"""The tool-call seam: the order of its steps and what each hook may do."""

from __future__ import annotations

from typing import Any

import pytest

from rpcd.tools import AbortSignal, Block, FunctionTool, ToolCall, ToolCallHooks, ToolOutcome, ToolSeam
from rpcd.tools.base import ToolCallContext, schema

pytestmark = pytest.mark.anyio


def echo_tool(ran: list[dict[str, Any]]) -> FunctionTool:
    async def run(call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        ran.append(dict(args))
        return {"content": [{"type": "text", "text": f"echo {args['word']}"}], "details": {"n": len(ran)}}

    return FunctionTool(name="echo", description="echo", run=run,
                        parameters=schema({"word": {"type": "string"}, "times": {"type": "number"}}, ("word",)))


async def test_hooks_run_in_order_and_see_validated_mutable_arguments() -> None:
    ran: list[dict[str, Any]] = []
    order: list[str] = []

    async def tool_call(call: ToolCall, signal: AbortSignal) -> Block | None:
        order.append(f"tool_call:{call.args}")
        call.args["word"] = call.args["word"].upper()  # Pi: mutate event.input in place
        return None

    async def authorize(call: ToolCall, signal: AbortSignal) -> Block | None:
        order.append(f"authorize:{call.args}")
        return None

    async def tool_result(call: ToolCall, outcome: ToolOutcome, signal: AbortSignal) -> ToolOutcome:
        order.append("tool_result")
        return ToolOutcome(content=[*outcome.content, {"type": "text", "text": "patched"}], details=outcome.details)

    seam = ToolSeam({"echo": echo_tool(ran)}, ToolCallHooks(tool_call=tool_call, authorize=authorize,
                                                            tool_result=tool_result))
    outcome = await seam.run("c1", "echo", {"word": "hi", "times": "2"}, AbortSignal())
    assert order == ["tool_call:{'word': 'hi', 'times': 2}", "authorize:{'word': 'HI', 'times': 2}", "tool_result"]
    assert ran == [{"word": "HI", "times": 2}]
    assert outcome.content == [{"type": "text", "text": "echo HI"}, {"type": "text", "text": "patched"}]
    assert outcome.is_error is False


@pytest.mark.parametrize(("hook", "text"), [("tool_call", "no echo today"), ("authorize", "not approved")])
async def test_a_block_from_either_hook_is_an_error_result_and_nothing_runs(hook: str, text: str) -> None:
    ran: list[dict[str, Any]] = []

    async def block(call: ToolCall, signal: AbortSignal) -> Block | None:
        return Block(reason=text, terminate=True)

    seam = ToolSeam({"echo": echo_tool(ran)}, ToolCallHooks(**{hook: block}))
    outcome = await seam.run("c1", "echo", {"word": "hi"}, AbortSignal())
    assert ran == []
    assert (outcome.content, outcome.details, outcome.is_error, outcome.terminate) == (
        [{"type": "text", "text": text}], {}, True, True)


async def test_a_raising_tool_call_hook_blocks_with_its_message() -> None:
    ran: list[dict[str, Any]] = []

    async def broken(call: ToolCall, signal: AbortSignal) -> Block | None:
        raise ValueError("extension exploded")

    outcome = await ToolSeam({"echo": echo_tool(ran)}, ToolCallHooks(tool_call=broken)).run(
        "c1", "echo", {"word": "x"}, AbortSignal())
    assert ran == [] and outcome.is_error and outcome.content[0]["text"] == "extension exploded"


async def test_a_block_without_reason_gets_pis_default_text() -> None:
    async def block(call: ToolCall, signal: AbortSignal) -> Block | None:
        return Block()

    outcome = await ToolSeam({"echo": echo_tool([])}, ToolCallHooks(authorize=block)).run(
        "c1", "echo", {"word": "x"}, AbortSignal())
    assert outcome.content[0]["text"] == "Tool execution was blocked"


async def test_nothing_runs_once_the_session_is_no_longer_live() -> None:
    ran: list[dict[str, Any]] = []
    live = [True]

    async def disposes_meanwhile(call: ToolCall, signal: AbortSignal) -> Block | None:
        live[0] = False  # e.g. a replacement invalidated the session while the hook awaited
        return None

    seam = ToolSeam({"echo": echo_tool(ran)}, ToolCallHooks(authorize=disposes_meanwhile, is_live=lambda: live[0]))
    outcome = await seam.run("c1", "echo", {"word": "x"}, AbortSignal())
    assert ran == [] and outcome.is_error and outcome.content[0]["text"] == "Operation aborted"


async def test_unknown_tool_and_invalid_arguments_are_pis_errors() -> None:
    seam = ToolSeam({"echo": echo_tool([])})
    missing = await seam.run("c1", "nope", {}, AbortSignal())
    assert missing.content[0]["text"] == "Tool nope not found"
    invalid = await seam.run("c1", "echo", {"times": "many"}, AbortSignal())
    assert invalid.content[0]["text"] == (
        'Validation failed for tool "echo":\n  - word: must have required properties word\n'
        '  - times: must be number\n\nReceived arguments:\n{\n  "times": "many"\n}')


async def test_a_tool_that_ignores_the_signal_is_cancelled_on_abort() -> None:
    import anyio

    async def forever(call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    tool = FunctionTool(name="wait", description="", parameters={"type": "object"}, run=forever,
                        accepts_signal=False)
    signal = AbortSignal()
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: _abort_soon(signal))
        outcome = await ToolSeam({"wait": tool}).run("c1", "wait", {}, signal)
    assert outcome.content[0]["text"] == "Operation aborted" and outcome.is_error


async def _abort_soon(signal: AbortSignal) -> None:
    import anyio

    await anyio.sleep(0.05)
    signal.abort()
