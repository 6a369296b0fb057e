"""Value types the rooms exchange: diagnostics, model refs, session snapshots, extension bindings.

They are plain data (attrs, frozen) and small protocols with no behaviour of their own, so the
store, the runtime, the host and the wire can all speak them without importing each other. The
host's port (``rpcd.host.port``) is written in these types.


Events are plain ``dict`` objects in Pi's shapes (``{"type": "message_update", ...}``):
they go to the wire as they are, so there is no second model of them to keep in sync.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias

import attrs

DiagnosticType: TypeAlias = Literal["info", "warning", "error"]
ForkPosition: TypeAlias = Literal["before", "at"]
SessionEvent: TypeAlias = Mapping[str, Any]
"""One AgentSession event in Pi's shape; ``event["type"]`` names it."""
EventListener: TypeAlias = Callable[[SessionEvent], None]
Unsubscribe: TypeAlias = Callable[[], None]


@attrs.frozen
class Diagnostic:
    """``AgentSessionRuntimeDiagnostic``: ``{type, message}`` (Pi has no ``level`` field)."""

    type: DiagnosticType
    message: str


@attrs.frozen
class ReplaceResult:
    """What a replacement returns: Pi's ``{cancelled, selectedText?}``."""

    cancelled: bool
    selected_text: str | None = None


@attrs.frozen
class ExtensionError:
    """An extension handler failed; reported through ``ExtensionBindings.on_error``."""

    extension_path: str
    event: str
    error: str


@attrs.frozen
class ModelRef:
    provider: str
    model_id: str


@attrs.frozen
class SessionState:
    """A read-only snapshot of the current session for ``getState``."""

    session_id: str
    session_file: str | None
    cwd: str
    name: str | None
    leaf_id: str | None
    model: ModelRef | None
    thinking_level: str
    is_streaming: bool
    message_count: int


@attrs.frozen
class SessionTree:
    """Raw entries as in the file (file order, no header), the leaf, and the global labels."""

    entries: Sequence[Mapping[str, Any]]
    leaf_id: str | None
    labels: Mapping[str, str]


class UiContext(Protocol):
    """Extension UI callbacks the host supplies (forwarded to the client by the daemon).

    Dialogs resolve to Pi's cancel defaults (``None`` / ``False``) on timeout or refusal.
    """

    def notify(self, message: str, notify_type: Literal["info", "warning", "error"] = "info") -> None: ...

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool: ...

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None: ...

    async def input(self, title: str, placeholder: str | None = None, timeout: float | None = None) -> str | None: ...


@attrs.frozen
class ExtensionBindings:
    """``Parameters<AgentSession["bindExtensions"]>[0]``: what the host binds into a session."""

    mode: str = "rpc"
    ui: UiContext | None = None
    on_error: Callable[[ExtensionError], None] | None = None


@attrs.frozen
class ModelDescription:
    """A model as ``getAvailableModels`` / ``cycleModel`` describe it (no URLs, headers or keys)."""

    provider: str
    id: str
    name: str
    api: str
    reasoning: bool
    thinking_levels: tuple[str, ...]
    input: tuple[str, ...]
    context_window: int
    max_tokens: int
    cost: Mapping[str, float]


@attrs.frozen
class CycleModelResult:
    """``cycleModel``: the model switched to, its (clamped) thinking level, and whether the
    cycle went over the scoped models (settings ``enabledModels`` / ``--models``)."""

    model: ModelDescription
    thinking_level: str
    is_scoped: bool
