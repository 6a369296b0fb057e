"""The narrow port between the serialized host and the session runtime.

This is the Python counterpart of the seed's ``Pick<AgentSessionRuntime, ...>``: the
host (``rpcd.host``) knows the runtime *only* through these protocols, so tests can
inject an in-memory fake that fails at any step, and the real runtime
(``rpcd.runtime``) satisfies them structurally. Nothing here knows JSON-RPC.

Events are plain ``dict`` objects in Pi's shapes (``{"type": "message_update", ...}``):
they go to the wire as they are, so there is no second model of them to keep in sync.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
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


class SessionPort(Protocol):
    """What the host may touch of the current AgentSession.

    The host never hands this object to request code; it calls these members on
    behalf of requests after checking that the host is available.
    """

    @property
    def session_id(self) -> str: ...

    @property
    def session_file(self) -> str | None: ...

    @property
    def is_streaming(self) -> bool: ...

    async def abort(self) -> None: ...

    # -- used by the host on behalf of requests (never handed out) --------------

    async def prompt(self, text: str) -> str:
        """Run one agent turn; resolves at turn end with the last ``stopReason``.
        Raises ``rpcd.errors.SessionBusyError`` while a turn is running."""
        ...

    def set_session_name(self, name: str) -> None: ...

    def set_model(self, provider: str, model_id: str) -> ModelRef:
        """Pi's ``setModel``: switch the model for the next turn and append ``model_change``.
        Raises ``rpcd.errors.ModelNotFoundError`` / ``ProviderError`` before appending anything."""
        ...

    def state(self) -> SessionState: ...

    def messages(self) -> list[Mapping[str, Any]]:
        """The current context (``build_session_context().messages``) in Pi's shapes."""
        ...

    def tree(self) -> SessionTree: ...

    # -- lifecycle ----------------------------------------------------------------

    async def bind_extensions(self, bindings: ExtensionBindings) -> None: ...

    def subscribe(self, listener: EventListener) -> Unsubscribe: ...


class RuntimePort(Protocol):
    """``Pick<AgentSessionRuntime, session | cwd | diagnostics | setBeforeSessionInvalidate |
    setRebindSession | newSession | switchSession | fork | importFromJsonl | dispose>``."""

    @property
    def session(self) -> SessionPort: ...

    @property
    def cwd(self) -> str: ...

    @property
    def diagnostics(self) -> Sequence[Diagnostic]: ...

    def set_before_session_invalidate(self, callback: Callable[[], None] | None) -> None: ...

    def set_rebind_session(self, callback: Callable[[SessionPort], Awaitable[None]] | None) -> None: ...

    async def new_session(self) -> ReplaceResult: ...

    async def switch_session(self, session_path: str, cwd_override: str | None = None) -> ReplaceResult: ...

    async def fork(self, entry_id: str, position: ForkPosition = "before") -> ReplaceResult: ...

    async def import_from_jsonl(self, input_path: str, cwd_override: str | None = None) -> ReplaceResult: ...

    async def dispose(self) -> None: ...


class HostBindings(Protocol):
    """The seed's ``bindings`` argument of ``bindSerializedSessionRuntimeHost``."""

    def extension_bindings(self, session: SessionPort) -> ExtensionBindings: ...

    def subscribe(self, session: SessionPort) -> Unsubscribe:
        """Install every host listener for ``session``; return one idempotent unsubscribe.
        Must be atomic: if it raises, it has rolled back any partial installation."""
        ...

    def report_diagnostics(self, diagnostics: Sequence[Diagnostic]) -> None: ...

    async def flush_persistence(self) -> None: ...
