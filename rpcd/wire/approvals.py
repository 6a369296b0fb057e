"""Wire handlers of the tool-approval methods: ``setApprovalPolicy``, ``listApprovalRules``,
``revokeApprovalRule`` — and of ``setSandbox``, which, like the policy, is the process's.

The policy and the rules belong to the process (``rpcd.core.values.ApprovalControl``, the tools'
``ApprovalGate``), not to the current session, so these calls do not queue behind replacements;
like ``listSessions`` they wait for startup and fail closed once the host is unusable. A new
policy applies to every tool call that is decided after the answer (a question already put to
the client stays asked).
"""

from __future__ import annotations

import anyio

from rpcd.core.values import ApprovalControl, ApprovalRule, SandboxSetter
from rpcd.host.host import SerializedHost
from rpcd.protocol import types as t
from rpcd.protocol.names import REVOKE_APPROVAL_RULE, SET_SANDBOX
from rpcd.wire.handlers import InvalidParamsError, host_usable


class ApprovalMethods:
    """The handlers behind the approval methods (registered from the method table with the session's)."""

    def __init__(self, host: SerializedHost, control: ApprovalControl, sandbox: SandboxSetter) -> None:
        self._host = host
        self._control = control
        self._sandbox = sandbox

    async def set_sandbox(self, params: t.SetSandboxParams) -> None:
        await host_usable(self._host)
        if params.mode is None and params.network is None:
            raise InvalidParamsError(SET_SANDBOX, "give mode, network or both", "$")
        self._sandbox.set(params.mode, params.network)

    async def set_approval_policy(self, params: t.SetApprovalPolicyParams) -> None:
        await host_usable(self._host)
        self._control.set_policy(params.policy)

    async def list_approval_rules(self, params: t.ListApprovalRulesParams) -> t.ListApprovalRulesResult:
        await host_usable(self._host)
        rules, diagnostics = await anyio.to_thread.run_sync(self._control.list_rules, params.cwd)
        return t.ListApprovalRulesResult(
            rules=[_wire_rule(rule) for rule in rules],
            diagnostics=[t.DiagnosticItem(d.type, d.message) for d in diagnostics],
        )

    async def revoke_approval_rule(self, params: t.RevokeApprovalRuleParams) -> t.RevokeApprovalRuleResult:
        await host_usable(self._host)
        rule = await anyio.to_thread.run_sync(self._control.revoke_rule, params.id)
        if rule is None:
            raise InvalidParamsError(REVOKE_APPROVAL_RULE, f"no approval rule with id {params.id!r}", "$.id")
        return t.RevokeApprovalRuleResult(rule=_wire_rule(rule))


def _wire_rule(rule: ApprovalRule) -> t.ApprovalRule:
    return t.ApprovalRule(id=rule.id, project=rule.project, tool_name=rule.tool_name, decision=rule.decision,
                          created_at=rule.created_at, command=rule.command, path=rule.path)
