"""What ``rpcd acp`` is started with: the daemon's flags, as the ACP front uses them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

from rpcd.core.model_inputs import ModelInputs
from rpcd.core.values import ApprovalPolicy
from rpcd.tools import ToolSelection
from rpcd.transport import DEFAULT_MAX_MESSAGE_BYTES

TrustPolicy = Literal["ask", "deny", "trust"]


@attrs.frozen
class AcpConfig:
    agent_dir: str
    trust_policy: TrustPolicy = "ask"
    """``ask``: every project that needs trust is asked about through ``session/request_permission``;
    ``deny`` / ``trust``: decided without asking (``--trust-policy``)."""
    trust_timeout: float = 120.0
    approval: ApprovalPolicy | None = None
    """``--approval``: every session's starting mode (else the ``approvalPolicy`` setting, else
    ``ask-writes``: every ACP client answers ``session/request_permission``)."""
    approval_timeout: float = 300.0
    extensions: tuple[str, ...] = ()
    extension_flags: Mapping[str, bool | str] = attrs.field(factory=dict)
    no_context_files: bool = False
    model_inputs: ModelInputs = attrs.field(factory=ModelInputs)
    tool_selection: ToolSelection = attrs.field(factory=ToolSelection)
    in_memory: bool = False
    """``--in-memory``: new sessions are never written (``session/load`` then finds only live ones)."""
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    delegate_files: bool = True
    """Use the editor's ``fs/*`` for the file tools when it offers them."""
    delegate_terminal: bool = True
    """Use the editor's ``terminal/*`` for ``bash`` when it offers them."""
