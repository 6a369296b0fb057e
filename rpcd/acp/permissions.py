"""Tool approval and project trust as ``session/request_permission``.

Tool calls: the session's :class:`~rpcd.core.values.ToolApprover` (bound into the session like the
daemon's ``tool/authorize``) asks with the four ACP option kinds, which map one to one onto the
approval gate's decisions — ``allow_once`` → ``allowOnce``, ``allow_always`` → ``allowAlways`` (a
remembered allow rule), ``reject_once`` → ``rejectOnce``, ``reject_always`` → ``rejectAlways`` (a
remembered reject rule); the rules are the daemon's (``<agentDir>/rpcd/approvals.json``), and the
two ``Always`` options name the rule they store (``Always allow: bash commands `ls *` (one simple
command each)``). The question goes out after the call's ``tool_call`` update (the stream is drained
first), and carries the same id, title, kind and locations; for a call that is not an edit, the
request's notices (a command longer than its title, a path through a symbolic link) are its content.
Anything but a selected option — the client's ``cancelled`` (ACP: what it answers once it cancelled
the prompt), an error, a timeout, an unknown option, a gone client — is a rejection that says why;
an abort of the turn stops waiting (the gate withdraws the question). An allowed call is marked ``in_progress``.

Project trust: the same request (``kind: other``, the reasons as its content); ``allow_once`` →
trust for this process, ``allow_always`` → trust remembered in ``trust.json``, ``reject_once`` →
deny, ``reject_always`` → deny remembered. Anything else denies. ``--trust-policy deny|trust``
decides without asking.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from typing import Final

import anyio
from acp.schema import (
    AllowedOutcome,
    ContentToolCallContent,
    PermissionOption,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallUpdate,
)

from rpcd.acp.connection import AcpConnection
from rpcd.acp.stream import UpdateStream
from rpcd.core.values import ApprovalDecision, ToolApprovalAnswer, ToolApprovalRequest, ToolApprover
from rpcd.runtime.resources.trust import AuthorizeProject, ProjectTrustContext, TrustDecision
from rpcd.sessions.spec import TrustPolicy

log = logging.getLogger("rpcd.acp.permissions")

OPTIONS: Final = (
    PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Always reject", kind="reject_always"),
)


def tool_options(request: ToolApprovalRequest) -> tuple[PermissionOption, ...]:
    """The four options, the ``Always`` ones naming the rule they store (``Always allow bash commands
    `ls *` (one simple command each)``)."""
    rule = request.always_rule
    if rule is None:
        return OPTIONS
    return tuple(option.model_copy(update={"name": f"{option.name}: {rule.description}"})
                 if option.kind in ("allow_always", "reject_always") else option for option in OPTIONS)


DECISIONS: Final[Mapping[str, ApprovalDecision]] = {
    "allow_once": "allowOnce", "allow_always": "allowAlways",
    "reject_once": "rejectOnce", "reject_always": "rejectAlways",
}
TRUST_OPTIONS: Final = (
    PermissionOption(option_id="allow_once", name="Trust for this session", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always trust this project", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Don't trust", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Never trust this project", kind="reject_always"),
)
TRUST_DECISIONS: Final[Mapping[str, TrustDecision]] = {
    "allow_once": TrustDecision("trustOnce"),
    "allow_always": TrustDecision("trust", remember=True),
    "reject_once": TrustDecision("deny"),
    "reject_always": TrustDecision("deny", remember=True),
}
_trust_ids = itertools.count(1)


async def ask_permission(conn: AcpConnection, session_id: str, tool_call: ToolCallUpdate,
               options: tuple[PermissionOption, ...], timeout: float) -> str | None:
    """The selected option id; ``None`` for cancelled / timeout / error / gone (the reason is logged)."""
    try:
        with anyio.fail_after(timeout):
            answer = await conn.request_permission(session_id, tool_call, options)
    except TimeoutError:
        log.warning("no permission answer in time", extra={"sessionId": session_id, "timeout": timeout})
        return None
    except Exception as exc:
        log.warning("permission request failed: %s", type(exc).__name__, extra={"sessionId": session_id})
        return None
    outcome = answer.outcome
    if isinstance(outcome, AllowedOutcome) and outcome.option_id in {o.option_id for o in options}:
        return outcome.option_id
    return None


def tool_approver(conn: AcpConnection, session_id: str, stream: UpdateStream, timeout: float) -> ToolApprover:
    """The session's approver: one ``session/request_permission`` per call the gate asks about."""

    async def approve(request: ToolApprovalRequest) -> ToolApprovalAnswer:
        await stream.drain()  # the call's tool_call update (with its diff) reaches the client first
        tool_call = ToolCallUpdate(
            tool_call_id=request.tool_call_id, title=request.title, kind=request.kind, status="pending",
            locations=[ToolCallLocation(path=loc.path, line=loc.line) for loc in request.locations],
            raw_input=dict(request.arguments),
        )
        if request.notices and request.kind != "edit":  # (an edit's content is its diff: left as it is)
            tool_call.content = [ContentToolCallContent(type="content", content=TextContentBlock(
                type="text", text="\n".join(request.notices)))]
        chosen = await ask_permission(conn, session_id, tool_call, tool_options(request), timeout)
        if chosen is None:
            return ToolApprovalAnswer("rejectOnce", "the client did not allow it (cancelled, no answer or an error)",
                                      answered=False)
        decision = DECISIONS[chosen]
        if decision in ("allowOnce", "allowAlways"):
            stream.push(ToolCallProgress(session_update="tool_call_update", tool_call_id=request.tool_call_id,
                                         status="in_progress"))
        return ToolApprovalAnswer(decision)

    return approve


def trust_asker(conn: AcpConnection, session_id: str, policy: TrustPolicy, timeout: float) -> AuthorizeProject:
    """``authorize_project`` for the runtime factory of one ACP session."""

    async def authorize(cwd: str, context: ProjectTrustContext) -> TrustDecision:
        if policy == "trust":
            return TrustDecision("trustOnce")
        if policy == "deny":
            return TrustDecision("deny")
        reasons = ", ".join(context.reasons) or "project configuration"
        text = (f"The project {cwd} has {reasons}. Trusting it lets its settings apply and its extensions, "
                "skills and prompts load and run.")
        tool_call = ToolCallUpdate(
            tool_call_id=f"rpcd-trust-{next(_trust_ids)}", title=f"Trust the project {cwd}?", kind="other",
            status="pending", locations=[ToolCallLocation(path=cwd)],
            content=[ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))],
            raw_input={"cwd": cwd, "reasons": list(context.reasons)},
        )
        chosen = await ask_permission(conn, session_id, tool_call, TRUST_OPTIONS, timeout)
        return TRUST_DECISIONS[chosen] if chosen is not None else TrustDecision("deny")

    return authorize
