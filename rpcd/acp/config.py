"""What ``rpcd acp`` is started with: the daemon's flags (the session service's ``ProcessSpec``),
and what only this front decides."""

from __future__ import annotations

import attrs

from rpcd.sessions.spec import ProcessSpec
from rpcd.transport import DEFAULT_MAX_MESSAGE_BYTES


@attrs.frozen
class AcpConfig:
    spec: ProcessSpec
    """The flags every session is composed with (``--approval``: every session's starting mode, else
    the ``approvalPolicy`` setting, else ``ask-writes``: every ACP client answers
    ``session/request_permission``; ``--in-memory``: new sessions are never written, so
    ``session/load`` finds only live ones)."""
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    delegate_files: bool = True
    """Use the editor's ``fs/*`` for the file tools when it offers them."""
    delegate_terminal: bool = True
    """Use the editor's ``terminal/*`` for ``bash`` when it offers them."""

    @property
    def agent_dir(self) -> str:
        return self.spec.agent_dir
