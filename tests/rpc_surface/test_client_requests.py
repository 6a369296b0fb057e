"""Trust prompt and extension UI requests: answers, timeouts, errors, dead clients, cleanup."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import pytest

from rpcd.wire.client_requests import ClientRequests, UiBridge
from rpcd.wire.notifications import EventPump, Notification


class FakeClient:
    """Answers server → client requests from a script; records the requests withdrawn (cancelled
    before their answer), numbered like the server numbers them."""

    def __init__(self, answer: Any = None, *, hang: bool = False, error: bool = False) -> None:
        self.answer = answer
        self.hang = hang
        self.error = error
        self.asked: list[tuple[str, Mapping[str, Any]]] = []
        self.withdrawn: list[str] = []

    async def send_request(self, method: str, params: Mapping[str, Any]) -> Any:
        self.asked.append((method, params))
        msg_id = f"rpcd-{len(self.asked)}"
        try:
            if self.hang:
                await anyio.sleep_forever()
        except BaseException:
            self.withdrawn.append(msg_id)
            raise
        if self.error:
            raise RuntimeError("client said no")
        return self.answer


async def wait_until(predicate: Callable[[], bool]) -> None:
    for _ in range(10_000):
        if predicate():
            return
        await anyio.sleep(0.001)
    raise AssertionError("condition never became true")


async def _ignore(batch: Sequence[Notification]) -> None:
    return None


def make(client: FakeClient, **kw: Any) -> ClientRequests:
    kw.setdefault("authorize_project", True)
    kw.setdefault("extension_ui", True)
    return ClientRequests(client.send_request, EventPump(_ignore), **kw)


@pytest.mark.anyio
async def test_trusted_answer_is_returned_with_remember() -> None:
    client = FakeClient({"decision": "trust", "remember": True})
    decision = await make(client).authorize_project("/p", ["extensions"])
    assert (decision.decision, decision.remember, decision.asked) == ("trust", True, True)
    assert client.asked == [("host/authorizeProject", {"cwd": "/p", "reasons": ["extensions"]})]
    assert client.withdrawn == []


@pytest.mark.anyio
async def test_trust_timeout_denies_and_withdraws_the_request() -> None:
    client = FakeClient(hang=True)
    requests = make(client, trust_timeout=0.05)
    decision = await requests.authorize_project("/p", ["extensions"])
    assert decision.decision == "deny"
    assert client.withdrawn == ["rpcd-1"]
    assert requests.pending == 0


@pytest.mark.anyio
async def test_malformed_or_error_trust_answer_denies() -> None:
    assert (await make(FakeClient({"decision": "yes"})).authorize_project("/p", [])).decision == "deny"
    assert (await make(FakeClient(error=True)).authorize_project("/p", [])).decision == "deny"


@pytest.mark.anyio
async def test_without_capability_the_policy_decides_and_the_client_is_not_asked() -> None:
    client = FakeClient({"decision": "trust"})
    denied = await make(client, authorize_project=False).authorize_project("/p", [])
    trusted = await make(client, authorize_project=False, trust_policy="trust").authorize_project("/p", [])
    assert (denied.decision, denied.asked) == ("deny", False)
    assert trusted.decision == "trustOnce"
    assert client.asked == []


@pytest.mark.anyio
async def test_closing_resolves_pending_dialogs_with_defaults() -> None:
    client = FakeClient(hang=True)
    requests = make(client)
    ui = UiBridge(requests)
    results: dict[str, Any] = {}

    async def ask_confirm() -> None:
        results["confirm"] = await ui.confirm("t", "m")

    async def ask_trust() -> None:
        results["trust"] = (await requests.authorize_project("/p", [])).decision

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask_confirm)
        tg.start_soon(ask_trust)
        await wait_until(lambda: requests.pending == 2)
        requests.close()
    assert results == {"confirm": False, "trust": "deny"}
    assert sorted(client.withdrawn) == ["rpcd-1", "rpcd-2"]
    assert await ui.input("after close") is None


@pytest.mark.anyio
async def test_select_accepts_only_offered_values() -> None:
    assert await UiBridge(make(FakeClient({"value": "b"}))).select("t", ["a", "b"]) == "b"
    assert await UiBridge(make(FakeClient({"value": "zzz"}))).select("t", ["a", "b"]) is None
    assert await UiBridge(make(FakeClient({"value": "x"}), extension_ui=False)).input("t") is None


@pytest.mark.anyio
async def test_dialog_timeout_uses_the_extension_timeout() -> None:
    client = FakeClient(hang=True)
    assert await UiBridge(make(client)).confirm("t", "m", timeout=0.02) is False
    assert client.withdrawn == ["rpcd-1"]


@pytest.mark.anyio
async def test_cancelled_caller_withdraws_its_pending_request() -> None:
    client = FakeClient(hang=True)
    requests = make(client)
    with anyio.move_on_after(0.02):
        await requests.authorize_project("/p", [])
    assert client.withdrawn == ["rpcd-1"]
    assert requests.pending == 0


@pytest.mark.anyio
async def test_editor_is_asked_only_of_a_client_that_declared_it() -> None:
    undeclared = FakeClient({"value": "edited"})
    assert await UiBridge(make(undeclared)).editor("Edit", "prefill") is None
    assert undeclared.asked == []
    declared = FakeClient({"value": "edited"})
    bridge = UiBridge(make(declared, ui_features=frozenset({"editor"})))
    assert await bridge.editor("Edit", "line 1\nline 2") == "edited"
    assert declared.asked == [("ui/editor", {"title": "Edit", "prefill": "line 1\nline 2"})]
    assert await UiBridge(make(FakeClient({}), ui_features=frozenset({"editor"}))).editor("Edit") is None
    assert await UiBridge(make(FakeClient({"value": 3}), ui_features=frozenset({"editor"}))).editor("E") is None


@pytest.mark.anyio
async def test_editor_timeout_cancels_to_none_and_withdraws() -> None:
    client = FakeClient(hang=True)
    requests = make(client, ui_features=frozenset({"editor"}))
    assert await requests.editor("Edit", None, timeout=0.05) is None
    assert client.withdrawn == ["rpcd-1"] and requests.pending == 0


def test_ui_features_need_extension_ui() -> None:
    requests = make(FakeClient(), extension_ui=False, ui_features=frozenset({"editor", "setStatus"}))
    assert requests.ui_features == frozenset()
# -- tool approval ----------------------------------------------------------------------------------

TOOL_PARAMS = {"sessionId": "s", "generation": 0, "toolCallId": "c", "toolName": "bash", "kind": "execute",
               "title": "bash: ls", "arguments": {"command": "ls"}, "locations": []}


def approving(client: FakeClient, **kw: Any) -> ClientRequests:
    requests = make(client)
    requests.can_approve = kw.get("can_approve", True)
    requests.approval_timeout = kw.get("timeout", 5.0)
    return requests


@pytest.mark.anyio
@pytest.mark.parametrize("decision", ["allowOnce", "allowAlways", "rejectOnce", "rejectAlways"])
async def test_a_valid_tool_decision_is_returned_with_its_reason(decision: str) -> None:
    client = FakeClient({"decision": decision, "reason": "because"})
    answer = await approving(client).authorize_tool(TOOL_PARAMS)
    assert (answer.decision, answer.reason, answer.answered) == (decision, "because", True)
    assert client.asked == [("tool/authorize", TOOL_PARAMS)] and client.withdrawn == []


@pytest.mark.anyio
@pytest.mark.parametrize("reply", [{"decision": "maybe"}, {"decision": None}, {"reason": "x"}, [], "allowOnce",
                                   {"decision": "allowOnce", "reason": ["x"]}])
async def test_a_malformed_tool_decision_is_a_rejection(reply: Any) -> None:
    answer = await approving(FakeClient(reply)).authorize_tool(TOOL_PARAMS)
    assert (answer.decision, answer.answered) == ("rejectOnce", False)
    assert answer.reason is not None and answer.reason.startswith("the client's approval answer was invalid")


@pytest.mark.anyio
async def test_tool_approval_timeout_error_gone_and_no_capability_all_reject() -> None:
    hanging = FakeClient(hang=True)
    requests = approving(hanging, timeout=0.02)
    timed_out = await requests.authorize_tool(TOOL_PARAMS)
    assert timed_out.reason == "no approval answer within 0.02 s" and hanging.withdrawn == ["rpcd-1"]
    errored = await approving(FakeClient(error=True)).authorize_tool(TOOL_PARAMS)
    assert errored.reason == "the client answered the approval request with an error"
    silent = FakeClient({"decision": "allowOnce"})
    assert (await approving(silent, can_approve=False).authorize_tool(TOOL_PARAMS)).decision == "rejectOnce"
    assert silent.asked == []
    gone = approving(FakeClient(hang=True))
    results: list[Any] = []

    async def ask() -> None:
        results.append(await gone.authorize_tool(TOOL_PARAMS))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        await wait_until(lambda: gone.pending == 1)
        gone.close()
    assert results[0].reason == "the client is gone" and not results[0].answered
    assert (await gone.authorize_tool(TOOL_PARAMS)).reason == "the client is gone"
