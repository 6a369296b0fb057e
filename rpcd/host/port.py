"""The narrow port between the serialized host and the session runtime.

This is the Python counterpart of the seed's ``Pick<AgentSessionRuntime, ...>``: the
host (``rpcd.host``) knows the runtime *only* through these protocols, so tests can
inject an in-memory fake that fails at any step, and the real runtime
(``rpcd.runtime``) satisfies them structurally. Nothing here knows JSON-RPC. The value
types they speak live in ``rpcd.core.values``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

import attrs

from rpcd.core.values import (
    BashOutcome,
    CheckpointListing,
    CommandInfo,
    CycleModelResult,
    Diagnostic,
    EventListener,
    ExtensionBindings,
    ForkMessage,
    ForkPosition,
    ImageInput,
    LimitOverrides,
    LimitsState,
    McpServerState,
    ModelDescription,
    ModelRef,
    PromptOutcome,
    QueueMode,
    QueueSnapshot,
    ReplaceResult,
    RestoreOutcome,
    SessionState,
    SessionStats,
    SessionTree,
    StreamingBehavior,
    Unsubscribe,
)

__all__ = ["BeforeInvalidate", "Binding", "HostBindings", "HostSubscription", "RuntimePort", "SessionPort"]


BeforeInvalidate: TypeAlias = Callable[[str], None]
"""``(shutdown_reason) -> None``: the runtime's synchronous before-invalidate callback."""
HostSubscription: TypeAlias = Callable[[str], None]
"""``(shutdown_reason) -> None``: removes every host listener of one session; idempotent."""


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

    @property
    def session_start_event(self) -> Mapping[str, Any]:
        """The ``session_start`` event the runtime built this session with (Pi's ``reason``:
        ``startup``/``new``/``resume``/``fork``, and ``previousSessionFile`` when there was one)."""
        ...

    async def abort(self) -> None: ...

    # -- used by the host on behalf of requests (never handed out) --------------

    async def prompt(self, text: str, *, images: Sequence[ImageInput] = (),
                     streaming_behavior: StreamingBehavior | None = None) -> PromptOutcome:
        """Run one agent turn; resolves at turn end with the last ``stopReason``. While a turn is
        running: queued per ``streaming_behavior`` (resolves ``None``), else
        ``rpcd.core.errors.SessionBusyError``. Bad images raise before anything is recorded.
        ``/name args`` of an extension command runs that command instead (also while a turn runs):
        ``CommandRan``."""
        ...

    def commands(self) -> list[CommandInfo]:
        """Every command a prompt can invoke now (extension commands, templates, skills)."""
        ...

    def mcp_servers(self) -> list[McpServerState]:
        """The MCP servers the session named: status, tools, last error."""
        ...

    # -- turn control (Pi's AgentSession) ---------------------------------------------------

    def steer(self, text: str, images: Sequence[ImageInput] = ()) -> None: ...

    def follow_up(self, text: str, images: Sequence[ImageInput] = ()) -> None: ...

    def clear_queue(self) -> QueueSnapshot:
        """Drop the queued input and return it."""
        ...

    def drop_queue(self) -> QueueSnapshot:
        """Like ``clear_queue``, for a session about to be disposed: what it drops is reported
        (``dropped_queue``) instead of run after the abort."""
        ...

    @property
    def dropped_queue(self) -> QueueSnapshot | None:
        """What ``drop_queue`` dropped (``None``: nothing)."""
        ...

    def set_steering_mode(self, mode: QueueMode) -> None: ...

    def set_follow_up_mode(self, mode: QueueMode) -> None: ...

    def set_thinking_level(self, level: str) -> str:
        """Clamp, switch, append ``thinking_level_change`` if it changed; returns the effective level."""
        ...

    def cycle_thinking_level(self) -> str | None: ...

    def available_thinking_levels(self) -> list[str]: ...

    def stats(self) -> SessionStats: ...

    def set_auto_retry(self, enabled: bool) -> None: ...

    def abort_retry(self) -> None: ...

    def last_assistant_text(self) -> str | None: ...

    def fork_messages(self) -> list[ForkMessage]: ...

    def entries(self, since: str | None = None) -> tuple[list[dict[str, Any]], str | float | None]:
        """Raw entries in append order (after ``since``; ``InvalidEntryError`` if unknown) and the leaf."""
        ...

    async def bash(self, command: str, *, exclude_from_context: bool | None = None, timeout: float | None = None,
                   request_id: int | str | None = None) -> BashOutcome: ...

    def abort_bash(self) -> None: ...

    def set_session_name(self, name: str) -> None: ...

    def set_model(self, provider: str, model_id: str) -> ModelRef:
        """Pi's ``setModel``: switch the model for the next turn and append ``model_change``.
        Raises ``rpcd.core.errors.ModelNotFoundError`` / ``ProviderError`` before appending anything."""
        ...

    def cycle_model(self, direction: str = "forward") -> CycleModelResult | None:
        """Pi's ``cycleModel``: the next usable model (scoped models first); ``None`` when there is
        nothing to cycle to. Appends ``model_change`` (and ``thinking_level_change`` if it changes)."""
        ...

    def available_models(self) -> list[ModelDescription]:
        """The models usable now, in Pi's order."""
        ...

    async def compact(self, custom_instructions: str | None = None) -> dict[str, Any]:
        """Pi's manual ``compact``: aborts a running turn, then summarizes; returns Pi's result.
        Raises ``rpcd.core.errors.CompactionError`` (``CompactionCancelledError``) when nothing was written."""
        ...

    def set_auto_compaction(self, enabled: bool) -> None: ...

    async def navigate_tree(self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool | None = None, label: str | None = None,
                            restore_files: bool = False) -> dict[str, Any]:
        """Pi's ``navigateTree``: ``{cancelled, aborted?, editorText?, summaryEntry?}``."""
        ...

    def set_label(self, entry_id: str, label: str | None = None) -> str:
        """Append a ``label`` entry; returns its id. ``InvalidEntryError`` for an unknown entry."""
        ...

    def state(self) -> SessionState: ...

    def messages(self) -> list[Mapping[str, Any]]:
        """The current context (``build_session_context().messages``) in Pi's shapes."""
        ...

    def tree(self, nested: bool = False) -> SessionTree:
        """``nested``: with Pi's ``getTree()`` nodes too."""
        ...

    async def export_html(self, output_path: str | None = None) -> str:
        """Pi's ``exportToHtml``; returns the path written (never an existing file)."""
        ...

    async def export_markdown(self, output_path: str | None = None,
                              inline: bool = False) -> tuple[str | None, str | None]:
        """The current branch as Markdown: ``(path written, None)`` or, ``inline``, ``(None, text)``."""
        ...

    def set_limits(self, overrides: LimitOverrides) -> LimitsState | None:
        """Spending caps beating the settings; the caps in force after (``None``: none)."""
        ...

    def checkpoint_listing(self, files: bool = False) -> CheckpointListing:
        """The session's file checkpoints and what ``undo`` restores."""
        ...

    async def restore_checkpoint(self, entry_id: str | None, *, files: Sequence[str] | None = None,
                                 force: bool = False, dry_run: bool = False) -> RestoreOutcome:
        """Restore a file checkpoint (``None``: what ``undo`` restores)."""
        ...

    def export_jsonl(self, output_path: str) -> str:
        """Pi's ``exportToJsonl``: the current branch as a new session file; returns its path."""
        ...

    # -- lifecycle ----------------------------------------------------------------

    async def bind_extensions(self, bindings: ExtensionBindings) -> None: ...

    async def wait_for_idle(self) -> None:
        """Until no turn runs."""
        ...

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

    def set_before_session_invalidate(self, callback: BeforeInvalidate | None) -> None:
        """Called synchronously just before the current session is disposed, with the reason of its
        ``session_shutdown`` (``new``/``resume``/``fork``, ``quit`` for the final disposal)."""
        ...

    def set_rebind_session(self, callback: Callable[[SessionPort], Awaitable[None]] | None) -> None: ...

    async def new_session(self, parent_session: str | None = None, cwd: str | None = None,
                          setup: Callable[[Any], Any] | None = None) -> ReplaceResult:
        """A new session in the current cwd, or in ``cwd`` (validated before teardown); ``setup``
        gets the new session's writer before it is bound (an extension's ``new_session(setup=...)``)."""
        ...

    async def reload(self) -> ReplaceResult:
        """The current session file reopened with freshly read settings, extensions, skills, prompt
        templates and context files (reason ``reload``); refused while a turn runs."""
        ...

    async def switch_session(self, session_path: str, cwd_override: str | None = None) -> ReplaceResult: ...

    async def fork(self, entry_id: str, position: ForkPosition = "before") -> ReplaceResult: ...

    async def import_from_jsonl(self, input_path: str, cwd_override: str | None = None) -> ReplaceResult: ...

    async def dispose(self) -> None: ...


@attrs.frozen
class Binding:
    """What the host tells its bindings about the session it binds: the session, the generation the
    host gave it (the host alone counts generations) and the host operation that bound it."""

    session: SessionPort
    generation: int
    operation: str


class HostBindings(Protocol):
    """The seed's ``bindings`` argument of ``bindSerializedSessionRuntimeHost``."""

    def extension_bindings(self, session: SessionPort) -> ExtensionBindings: ...

    def subscribe(self, binding: Binding) -> HostSubscription:
        """Install every host listener for ``binding.session``; return one idempotent unsubscribe.
        Must be atomic: if it raises, it has rolled back any partial installation."""
        ...

    def report_diagnostics(self, binding: Binding, diagnostics: Sequence[Diagnostic]) -> None: ...

    async def flush_persistence(self, current: SessionPort | None) -> None:
        """Record ``current`` durably (``None``: the host has no usable session to record)."""
        ...
