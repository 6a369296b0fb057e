"""Wire handlers of the session's file checkpoints: ``listCheckpoints`` and ``restoreCheckpoint``
(``navigateTree {restoreFiles}`` answers with the same restore shape).

Both act on the session current at the request's arrival, so they take their place in the host's
FIFO like every session call; a restore runs inside the queue (nothing else touches the session
while its files are written) and is refused while a turn runs (``SESSION_BUSY``).
"""

from __future__ import annotations

from collections.abc import Awaitable

from rpcd.core.values import CheckpointListing, RestoreOutcome
from rpcd.host.host import Pending, SerializedHost
from rpcd.protocol import types as t
from rpcd.protocol.names import LIST_CHECKPOINTS, RESTORE_CHECKPOINT
from rpcd.wire.calls import session_call, tracked
from rpcd.wire.convert import checkpoint_summary, restore_result
from rpcd.wire.handlers import answered
from rpcd.wire.notifications import EventPump


class CheckpointMethods:
    def __init__(self, host: SerializedHost, pump: EventPump) -> None:
        self._host = host
        self._pump = pump

    def list_checkpoints(self, params: t.ListCheckpointsParams | None = None) -> Awaitable[t.ListCheckpointsResult]:
        files = params is not None and params.files is True
        pending = tracked(session_call(self._host, LIST_CHECKPOINTS, lambda session: session.checkpoint_listing(files)))
        return self._listed(pending)

    async def _listed(self, pending: Pending[CheckpointListing]) -> t.ListCheckpointsResult:
        listing = await answered(self._pump, pending)
        return t.ListCheckpointsResult(checkpoints=[checkpoint_summary(c) for c in listing.checkpoints],
                                       undo_entry_id=listing.undo_entry_id)

    def restore_checkpoint(self, params: t.RestoreCheckpointParams | None = None
                           ) -> Awaitable[t.RestoreCheckpointResult]:
        given = params or t.RestoreCheckpointParams()
        pending = tracked(session_call(self._host, RESTORE_CHECKPOINT, lambda session: session.restore_checkpoint(
            given.entry_id, files=given.files, force=given.force is True, dry_run=given.dry_run is True)))
        return self._restored(pending)

    async def _restored(self, pending: Pending[RestoreOutcome]) -> t.RestoreCheckpointResult:
        return restore_result(await answered(self._pump, pending))
