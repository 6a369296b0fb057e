"""Wire handlers of the saved project-trust decisions: ``listTrust``, ``revokeTrust``, ``saveTrust``.

The decisions live in ``<agentDir>/trust.json`` (shared with Pi), not in the current session, so
these calls do not queue behind replacements; like the approval methods they wait for startup and
fail closed once the host is unusable. A revoked directory is asked about again the next time a
session starts there (the current session keeps what it was given).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import anyio

from rpcd.core.values import SavedTrust, TrustControl
from rpcd.host.host import SerializedHost
from rpcd.protocol import types as t
from rpcd.protocol.names import REVOKE_TRUST, SAVE_TRUST
from rpcd.wire.handlers import InvalidParamsError, host_usable


class TrustMethods:
    """The handlers behind the trust methods (registered from the method table with the session's)."""

    def __init__(self, host: SerializedHost, control: Callable[[], TrustControl]) -> None:
        self._host = host
        self._make_control = control
        self._control: TrustControl | None = None

    async def _usable(self) -> TrustControl:
        await host_usable(self._host)
        if self._control is None:
            self._control = self._make_control()  # the runtime's trust module, imported on first use
        return self._control

    async def list_trust(self, params: t.EmptyParams | None = None) -> t.ListTrustResult:
        control = await self._usable()
        decisions, diagnostics = await anyio.to_thread.run_sync(control.list_decisions)
        return t.ListTrustResult(
            decisions=[_wire(d) for d in decisions],
            diagnostics=[t.DiagnosticItem(d.type, d.message) for d in diagnostics],
        )

    async def revoke_trust(self, params: t.RevokeTrustParams) -> t.RevokeTrustResult:
        control = await self._usable()
        removed = await anyio.to_thread.run_sync(control.revoke, params.directory)
        if removed is None:
            raise InvalidParamsError(REVOKE_TRUST, f"no saved trust decision for {params.directory!r}", "$.directory")
        return t.RevokeTrustResult(decision=_wire(removed))

    async def save_trust(self, params: t.SaveTrustParams) -> t.SaveTrustResult:
        """Pi's ``/trust``: the decision is saved for sessions started from now on; the current one
        keeps what it was given (Pi: "restart pi for changes to take effect")."""
        control = await self._usable()

        def save() -> SavedTrust:
            if not os.path.isabs(params.directory) or not os.path.isdir(params.directory):
                raise InvalidParamsError(SAVE_TRUST, f"not an existing absolute directory: {params.directory!r}",
                                         "$.directory")
            return control.save(params.directory, params.trusted)

        return t.SaveTrustResult(decision=_wire(await anyio.to_thread.run_sync(save)))


def _wire(decision: SavedTrust) -> t.TrustDecision:
    return t.TrustDecision(directory=decision.directory, trusted=decision.trusted)
