"""The approval policy: the seam's ``authorize`` step (after the extensions' ``tool_call``
handlers, before anything runs).

One :class:`ApprovalGate` lives for the whole process (the daemon makes it; the ACP front can
make its own) and is shared by every session. For each call it decides, in this order:

1. the **policy** in force — ``setApprovalPolicy`` (or ``--approval``) if given, else the
   ``approvalPolicy`` setting (project settings count only for a trusted project, as every
   project setting), else ``ask-writes`` when the client can answer approval requests and
   ``auto`` when it cannot. ``auto`` lets everything run (Pi's behaviour: no rule is consulted);
   ``ask-writes`` lets read-only calls run; ``deny-writes`` refuses calls that may change
   something and lets read-only ones run; ``ask-all`` asks about every call;
2. the project's **remembered rules** (``approval_rules``): a reject rule refuses, an allow rule
   lets the call run — without asking;
3. the **client**, through the session's ``ToolApprover`` (``tool/authorize``): ``allowOnce`` /
   ``allowAlways`` run the call, ``rejectOnce`` / ``rejectAlways`` refuse it; the ``…Always``
   answers store a rule first. No approver, no answer, an invalid answer, a timeout, a gone client
   are all refusals. An abort while waiting withdraws the question (the pending ask is cancelled)
   and the call never runs.

A refusal is a ``Block``: the model reads its reason as the tool's error result, persisted as Pi
persists a call an extension blocked.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import anyio
import anyio.to_thread

from rpcd.core.values import (
    APPROVAL_POLICIES,
    ApprovalPolicy,
    ApprovalRule,
    Diagnostic,
    ToolApprovalAnswer,
    ToolApprovalRequest,
    ToolApprover,
)
from rpcd.tools.approval_facts import CallFacts, ToolProfile, describe_call
from rpcd.tools.approval_rules import ApprovalRules, ApprovalRulesError, always_rule, canonical_project, new_rule
from rpcd.tools.base import AbortSignal
from rpcd.tools.blocking import unless_aborted
from rpcd.tools.seam import Block, ToolCall

_log = logging.getLogger("rpcd.tools.approval")

POLICY_SETTING: Final = "approvalPolicy"
REJECTED_BY_USER: Final = "Tool call rejected by the user"
REJECTED: Final = "Tool call rejected"
OFF_LOOP_COMMAND_CHARS: Final = 4096
"""A bash command longer than this is matched against the rules in a worker thread."""


def parse_policy(value: Any) -> ApprovalPolicy | None:
    """``value`` as a policy name, or ``None`` if it is not one."""
    for policy in APPROVAL_POLICIES:
        if value == policy:
            return policy
    return None


class ApprovalGate:
    """The process's approval policy and rules (``rpcd.core.values.ApprovalControl``)."""

    def __init__(
        self,
        rules: ApprovalRules | None = None,
        *,
        policy: ApprovalPolicy | None = None,
        client_can_answer: bool = False,
    ) -> None:
        self.rules = rules
        self.override: ApprovalPolicy | None = policy
        """``--approval`` / ``setApprovalPolicy``: beats the setting while the process lives."""
        self.client_can_answer = client_can_answer
        """Whether the client declared it answers approval requests (this makes the default ``ask-writes``)."""

    # -- the policy --------------------------------------------------------------------------------

    def set_policy(self, policy: ApprovalPolicy) -> None:
        self.override = policy

    def effective_policy(self, setting: Any = None) -> ApprovalPolicy:
        """The policy for a session whose settings say ``setting`` (``approvalPolicy``)."""
        if self.override is not None:
            return self.override
        from_setting = parse_policy(setting)
        if from_setting is not None:
            return from_setting
        return "ask-writes" if self.client_can_answer else "auto"

    def diagnostics(self, setting: Any = None) -> list[Diagnostic]:
        """Warnings for a new session: an unknown ``approvalPolicy`` value, an unusable rules file."""
        out: list[Diagnostic] = []
        if setting is not None and parse_policy(setting) is None:
            allowed = ", ".join(APPROVAL_POLICIES)
            out.append(Diagnostic("warning", f'Setting "{POLICY_SETTING}" ignored: not one of {allowed}'))
        warning = self.rules.warning() if self.rules is not None else None
        if warning is not None:
            out.append(Diagnostic("warning", warning))
        return out

    # -- rules (for the fronts) ----------------------------------------------------------------

    def list_rules(self, project: str | None = None) -> tuple[list[ApprovalRule], list[Diagnostic]]:
        if self.rules is None:
            return [], []
        warning = self.rules.warning()
        return self.rules.for_project(project), ([Diagnostic("warning", warning)] if warning else [])

    def revoke_rule(self, rule_id: str) -> ApprovalRule | None:
        """Remove a rule. Raises ``ApprovalRulesError`` when the file cannot be used."""
        return self.rules.revoke(rule_id) if self.rules is not None else None

    # -- one call -----------------------------------------------------------------------------------

    async def authorize(
        self,
        call: ToolCall,
        signal: AbortSignal,
        *,
        cwd: str,
        profile: ToolProfile,
        setting: Any = None,
        approver: ToolApprover | None = None,
    ) -> Block | None:
        """``None``: the call may run; a ``Block``: it is refused (its reason goes to the model)."""
        policy = self.effective_policy(setting)
        if policy == "auto":
            return None
        facts = describe_call(call.tool_name, call.args, cwd=cwd, profile=profile)
        if not facts.writes and policy in ("ask-writes", "deny-writes"):
            return None
        if policy == "deny-writes":
            return Block(f"{REJECTED}: the approval policy deny-writes refuses calls that may change something")
        project = canonical_project(cwd)
        # a stat per call, a (small) read only when the file changed: cheap enough for the event loop,
        # but reading a long command for the commands inside it is not
        if self.rules is None:
            rule = None
        elif len(facts.command or "") > OFF_LOOP_COMMAND_CHARS:
            rule = await anyio.to_thread.run_sync(self.rules.decide, facts, project)
        else:
            rule = self.rules.decide(facts, project)
        if rule is not None:
            if rule.decision == "reject":
                return Block(f"{REJECTED}: refused by a remembered approval rule ({_describe(rule)})")
            return None
        if approver is None:
            return Block(f"{REJECTED}: the approval policy {policy} needs a client that answers approval requests")
        answer = await _ask(approver, facts.request(call.tool_call_id, always_rule(facts, project)), signal)
        if answer is None:  # aborted while waiting: the seam reports the abort
            return None
        if answer.decision in ("allowAlways", "rejectAlways"):
            await anyio.to_thread.run_sync(self._remember, facts, project,
                                           "allow" if answer.decision == "allowAlways" else "reject")
        if answer.decision in ("allowOnce", "allowAlways"):
            return None
        reason = (answer.reason or "").strip()
        if not answer.answered:
            return Block(f"{REJECTED}: {reason}" if reason else REJECTED)
        return Block(f"{REJECTED_BY_USER}: {reason}" if reason else REJECTED_BY_USER)

    def _remember(self, facts: CallFacts, project: str, decision: Any) -> None:
        if self.rules is None:
            return
        try:
            self.rules.add(new_rule(facts, project, decision))
        except (ApprovalRulesError, OSError) as exc:
            # The answer still counts for this call; only remembering it failed.
            _log.warning("approval rule not saved: %s", exc.message if isinstance(exc, ApprovalRulesError)
                         else type(exc).__name__)


async def _ask(approver: ToolApprover, request: ToolApprovalRequest, signal: AbortSignal) -> ToolApprovalAnswer | None:
    """The approver's answer, or ``None`` if the signal fired first (the ask is then cancelled,
    which withdraws the question from the client)."""
    try:
        answer = await unless_aborted(lambda: approver(request), signal)
    except Exception as exc:
        if signal.aborted:  # unless_aborted's ToolError: the question was withdrawn
            return None
        # an approver bug refuses the call, never runs it
        _log.warning("tool approver failed: %s", type(exc).__name__, exc_info=True)
        return ToolApprovalAnswer("rejectOnce", "the approval request failed", answered=False)
    return None if signal.aborted else answer


def _describe(rule: ApprovalRule) -> str:
    matcher: Mapping[str, str | None] = {"command": rule.command, "path": rule.path}
    shown = next((f"{key} {value}" for key, value in matcher.items() if value is not None), "every call")
    return f"{rule.tool_name}, {shown}, id {rule.id}"
