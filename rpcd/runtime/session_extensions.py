"""The session's side of Pi's extension API: what ``pi.*`` and ``ctx.*`` do in the session
(``rpcd.runtime.extensions.context.SessionActions``), mixed into ``AgentSession``.

Pi's semantics (``agent-session.js``), each here once:

* ``send_custom_message`` (``pi.send_message``): ``nextTurn`` waits for the next prompt; while a
  turn runs it is queued (steer, or follow-up) unless ``trigger_turn=False``, then it is appended
  after the running turn's tool results; idle with ``trigger_turn`` it starts a turn; idle without,
  it is appended at once (``message_start``/``message_end`` to clients, a ``custom_message`` entry);
* ``send_user_message``: the client's ``prompt`` with ``source: "extension"`` (commands and templates
  only with ``expand_prompt_templates``); queued while a turn runs (``deliver_as`` required);
* turns the session starts for an extension go through the host (``CommandActions.run_turn``):
  queued behind what was requested before, then run outside the queue like a client's prompt;
* the session's name, labels, tools, model and thinking level, and the reads ``ctx`` answers.
"""

from __future__ import annotations

import inspect
import logging
import os
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rpcd.core.errors import ModelNotFoundError, ProviderError, RpcdError
from rpcd.core.values import BashOutcome, ExtensionBindings, ExtensionError, ImageInput, StreamingBehavior
from rpcd.runtime.extensions.runner import describe

if TYPE_CHECKING:
    from rpcd.providers.base import ModelInfo, ProviderRegistry
    from rpcd.runtime.compaction import SessionCompaction
    from rpcd.runtime.extensions import ExtensionRunner
    from rpcd.runtime.tool_set import ToolSet
    from rpcd.runtime.turns.agent import Agent
    from rpcd.runtime.turns.queue import InputQueues
    from rpcd.runtime.turns.retry import SessionRetry
    from rpcd.store import SessionManager

_log = logging.getLogger("rpcd.runtime.session")


def _now_ms() -> int:
    return int(time.time() * 1000)


def split_user_content(content: str | Sequence[Mapping[str, Any]]) -> tuple[str, list[ImageInput]]:
    """Pi's ``sendUserMessage``: the text parts joined by newlines, the images kept."""
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[ImageInput] = []
    for block in content:
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        else:
            images.append(ImageInput(str(block.get("data", "")), str(block.get("mimeType", ""))))
    return "\n".join(texts), images


def image_block(image: ImageInput) -> dict[str, Any]:
    return {"type": "image", "data": image.data, "mimeType": image.mime_type}


class SessionExtensionActions:
    """``SessionActions`` for ``AgentSession`` (the attributes below are the session's)."""

    session_manager: SessionManager
    agent: Agent
    registry: ProviderRegistry | None
    model_inputs: Any
    queues: InputQueues
    bindings: ExtensionBindings | None
    tool_set: ToolSet
    compaction: SessionCompaction
    retry: SessionRetry
    _running: bool
    _disposed: bool
    _pending_next_turn: list[dict[str, Any]]
    _pending_custom: list[dict[str, Any]]
    _prompt_options: dict[str, Any]

    # provided by AgentSession
    def _live_runner(self) -> ExtensionRunner | None:
        raise NotImplementedError

    def _notify(self, event: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def _apply_tools(self) -> None:
        raise NotImplementedError

    def commands(self, *, offered: bool = True) -> list[Any]:
        raise NotImplementedError

    def settings(self) -> Any:
        raise NotImplementedError

    async def prompt(self, text: str, *, images: Sequence[ImageInput] = (),
                     streaming_behavior: StreamingBehavior | None = None, source: str = "rpc",
                     expand: bool = True) -> Any:
        raise NotImplementedError

    async def run_messages(self, messages: list[dict[str, Any]]) -> str:
        raise NotImplementedError

    def _switch_model(self, provider: str, model_id: str) -> tuple[ModelInfo, ModelInfo | None]:
        raise NotImplementedError

    def _model_selected(self, model: ModelInfo, previous: ModelInfo | None, source: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def set_thinking_level(self, level: str) -> str:
        raise NotImplementedError

    # -- background work ------------------------------------------------------------------

    def _report(self, extension_path: str, event: str, error: str) -> None:
        runner = self._live_runner()
        if runner is not None:
            runner.report_error(ExtensionError(extension_path, event, error))

    def _start_extension_turn(self, event: str, work: Callable[[], Awaitable[Any]]) -> None:
        """Run ``work`` (it starts or queues a turn) through the host, without waiting for it; a
        failure is an ``extension_error`` (``<runtime>``, ``event``), as Pi's ``.catch`` reports it."""
        bindings = self.bindings
        spawn = bindings.spawn if bindings is not None else None
        actions = bindings.command_actions if bindings is not None else None
        if spawn is None:
            self._report("<runtime>", event, "no host is bound to run it")
            return

        async def run() -> None:
            try:
                if actions is not None:
                    await actions.run_turn(event, work)
                else:
                    await work()
            except (RpcdError, Exception) as exc:
                self._report("<runtime>", event, getattr(exc, "message", None) or describe(exc))

        spawn(run)

    # -- pi.send_message / send_user_message ----------------------------------------------------

    def send_custom_message(self, message: dict[str, Any], *, trigger_turn: bool | None,
                            deliver_as: str | None) -> None:
        app: dict[str, Any] = {"role": "custom", "customType": message["customType"], "content": message["content"],
                               "display": message["display"]}
        if "details" in message:
            app["details"] = message["details"]
        app["timestamp"] = _now_ms()
        if deliver_as == "nextTurn":
            self._pending_next_turn.append(app)
        elif self._running and trigger_turn is not False:
            self.queues.add("follow_up" if deliver_as == "followUp" else "steering", None, app)
        elif trigger_turn:
            self._start_extension_turn("send_message", lambda: self._run_if_current([app]))
        elif self._running:
            # appended once the running turn's tool results are in: never between a call and its result
            self._pending_custom.append(app)
        else:
            self.append_custom_message(app)

    async def _run_if_current(self, messages: list[dict[str, Any]]) -> None:
        if not self._disposed:
            await self.run_messages(messages)

    def append_custom_message(self, app: dict[str, Any]) -> None:
        """Pi's ``_appendCustomMessage``: into the context and the file, announced to clients."""
        if self._disposed:
            return
        self.agent.messages.append(app)
        self.session_manager.append_custom_message_entry(app["customType"], app["content"], app["display"],
                                                         app.get("details"))
        self._notify({"type": "message_start", "message": app})
        self._notify({"type": "message_end", "message": app})

    def flush_pending_custom(self) -> None:
        pending, self._pending_custom = self._pending_custom, []
        for app in pending:
            self.append_custom_message(app)

    def send_user_message(self, content: str | list[dict[str, Any]], *, deliver_as: str | None,
                          expand_prompt_templates: bool) -> None:
        text, images = split_user_content(content)
        behavior: StreamingBehavior | None = "followUp" if deliver_as == "followUp" else (
            "steer" if deliver_as == "steer" else None)

        async def work() -> None:
            if not self._disposed:
                await self.prompt(text, images=images, streaming_behavior=behavior, source="extension",
                                  expand=expand_prompt_templates)

        self._start_extension_turn("send_user_message", work)

    # -- the session's name, labels, tools ------------------------------------------------------

    def rename_session(self, name: str) -> None:
        self.session_manager.append_session_info(name)
        self.session_info_changed()

    def session_info_changed(self) -> None:
        """``session_info_changed`` to clients and (not waited for) to extensions."""
        event: dict[str, Any] = {"type": "session_info_changed"}
        name = self.session_manager.get_session_name()
        if name is not None:
            event["name"] = name
        self._notify(event)
        runner = self._live_runner()
        if runner is not None:
            runner.emit_later(event)

    def session_name(self) -> str | None:
        return self.session_manager.get_session_name()

    def label_entry(self, entry_id: str, label: str | None) -> None:
        self.session_manager.append_label_change(entry_id, label)

    def active_tool_names(self) -> list[str]:
        return list(self.tool_set.active)

    def all_tools(self) -> list[dict[str, Any]]:
        return self.tool_set.describe()

    def set_active_tools(self, names: Sequence[str]) -> None:
        self.tool_set.set_active(names)
        self._apply_tools()

    def tools_changed(self) -> None:
        """An extension registered a tool after load (Pi's ``refreshTools``)."""
        if not self._disposed:
            self.tool_set.refresh()
            self._apply_tools()

    def commands_info(self) -> list[dict[str, Any]]:
        """Pi's ``getCommands`` entries (``name``, ``description``?, ``source``, ``sourceInfo``)."""
        out: list[dict[str, Any]] = []
        for info in self.commands(offered=False):
            entry: dict[str, Any] = {"name": info.name}
            if info.description is not None:
                entry["description"] = info.description
            entry["source"] = info.source
            entry["sourceInfo"] = dict(info.source_info)
            out.append(entry)
        return out

    # -- model and thinking ---------------------------------------------------------------------

    async def select_model(self, provider: str, model_id: str) -> bool:
        """``pi.set_model``: ``False`` for a model that cannot be used; ``model_select`` awaited."""
        try:
            model, previous = self._switch_model(provider, model_id)
        except (ModelNotFoundError, ProviderError):
            return False
        event = self._model_selected(model, previous, "set")
        runner = self._live_runner()
        if event is not None and runner is not None and runner.has_handlers("model_select"):
            await runner.emit(event)
        return True

    def model_json(self) -> dict[str, Any] | None:
        model = self.agent.model
        return model.to_pi() if model is not None else None

    def scoped_models_json(self) -> list[dict[str, Any]]:
        if self.registry is None:
            return []
        from rpcd.providers.model_selection import scoped_models

        out: list[dict[str, Any]] = []
        for scoped in scoped_models(self.registry, self.settings(), self.model_inputs):
            entry: dict[str, Any] = {"model": scoped.model.to_pi()}
            if scoped.thinking_level is not None:
                entry["thinkingLevel"] = scoped.thinking_level
            out.append(entry)
        return out

    def models_json(self, available_only: bool) -> list[dict[str, Any]]:
        if self.registry is None:
            return []
        models = self.registry.available_models() if available_only else self.registry.all_models()
        return [m.to_pi() for m in models]

    # -- run state --------------------------------------------------------------------------------

    def is_idle(self) -> bool:
        return not self._running and not self.compaction.is_compacting

    def is_project_trusted(self) -> bool:
        return getattr(getattr(self, "services", None), "project_trusted", False) is True

    @property
    def signal(self) -> Any:
        return self.agent.signal if self._running else None

    def request_abort(self) -> None:
        """Pi's ``void session.abort()``: the running turn, compaction and retry are told to stop;
        nothing waits for them here."""
        self.compaction.abort()
        if self._running:
            self.agent.request_abort()
            self.retry.cancel()

    def has_pending_messages(self) -> bool:
        return bool(self.queues.pending_count)

    def context_usage_json(self) -> dict[str, Any] | None:
        model = self.agent.model
        if model is None or model.context_window <= 0:
            return None
        from rpcd.runtime.usage import context_usage

        usage = context_usage(model.context_window, self.session_manager.get_branch(), self.agent.messages)
        if usage is None:
            return None
        return {"tokens": usage.tokens, "contextWindow": usage.context_window, "percent": usage.percent}

    def system_prompt_options(self) -> dict[str, Any]:
        import copy

        return copy.deepcopy(self._prompt_options)

    @property
    def system_prompt(self) -> str:
        return self.agent.system_prompt

    def session_reader(self) -> SessionManager:
        return self.session_manager

    # -- providers ----------------------------------------------------------------------------

    def register_provider(self, name: str, config: Mapping[str, Any], extension_path: str) -> None:
        from rpcd.runtime.extension_providers import register_extension_provider

        register_extension_provider(self, name, config, extension_path)

    def unregister_provider(self, name: str) -> None:
        from rpcd.runtime.extension_providers import unregister_extension_provider

        unregister_extension_provider(self, name)


# -- the seams the session installs for its extensions -----------------------------------------


class ExtensionRequestHooks:
    """``rpcd.providers.base.RequestHooks`` over the session's extensions (Pi's ``transformHeaders``,
    ``onPayload``, ``onResponse`` in ``sdk.js``); a no-op where no extension listens."""

    def __init__(self, session: Any) -> None:
        self._session = weakref.ref(session)

    def _runner(self, event: str) -> ExtensionRunner | None:
        session = self._session()
        runner = session._live_runner() if session is not None else None
        return runner if runner is not None and runner.has_handlers(event) else None

    async def headers(self, headers: dict[str, str]) -> dict[str, str | None]:
        runner = self._runner("before_provider_headers")
        if runner is None:
            return dict(headers)
        return await runner.emit_before_provider_headers(dict(headers))

    def changes_payload(self) -> bool:
        return self._runner("before_provider_request") is not None

    async def payload(self, payload: Any) -> Any:
        runner = self._runner("before_provider_request")
        if runner is None:
            return payload
        return await runner.emit_before_provider_request(payload)

    async def response(self, status: int, headers: Mapping[str, str]) -> None:
        runner = self._runner("after_provider_response")
        if runner is not None:
            await runner.emit({"type": "after_provider_response", "status": status, "headers": dict(headers)})


def install_extension_seams(session: Any, owner: Any) -> None:
    """Pi's ``extensionRunnerRef`` hooks: the ``context`` event before every model call, the
    provider request hooks, and a tool registered after load refreshing the tool set. Everything
    holds the session weakly (no reference cycle runs through a session)."""
    ref = weakref.ref(session)

    async def transform_context(messages: list[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
        current = ref()
        runner = current._live_runner() if current is not None else None
        if runner is None or not runner.has_handlers("context"):
            return messages
        transformed: list[dict[str, Any]] = await runner.emit_context(messages)
        return transformed

    def tools_changed() -> None:
        current = ref()
        if current is not None:
            current.tools_changed()

    session.agent.transform_context = transform_context
    session.agent.request_hooks = ExtensionRequestHooks(session)
    runner = session.extension_runner
    if runner is not None:
        runner.on_tools_changed(tools_changed)


def extension_source_info(extension_path: str) -> Any:
    """Pi's ``sourceInfo`` of a resource an extension named: ``extension:<its name>``, temporary."""
    from rpcd.runtime.resources.discovery import SourceInfo

    name = os.path.basename(extension_path.rstrip(os.sep))
    for suffix in (".ts", ".js", ".py"):
        name = name.removesuffix(suffix)
    base = None if extension_path.startswith("<") else os.path.dirname(extension_path)
    return SourceInfo(extension_path, f"extension:{name}", "temporary", "top-level", base)


def user_bash_result(decided: Any) -> BashOutcome | None:
    """A ``user_bash`` handler's ``{"result": BashResult}``: the command is not run."""
    result = decided.get("result") if isinstance(decided, Mapping) else getattr(decided, "result", None)
    if not isinstance(result, Mapping):
        return None
    code = result.get("exitCode")
    path = result.get("fullOutputPath")
    return BashOutcome(output=str(result.get("output", "")), exit_code=code if isinstance(code, int) else None,
                       cancelled=result.get("cancelled") is True, truncated=result.get("truncated") is True,
                       full_output_path=path if isinstance(path, str) else None)


def user_bash_operations(decided: Any) -> Any:
    """A ``user_bash`` handler's ``{"operations": ...}``: an object whose ``exec(command, cwd, *,
    on_data, signal, timeout, env)`` runs the command (Pi's ``BashOperations``) and answers
    ``{"exitCode": int | None}``."""
    operations = decided.get("operations") if isinstance(decided, Mapping) else getattr(decided, "operations", None)
    if operations is None:
        return None
    run = operations.get("exec") if isinstance(operations, Mapping) else getattr(operations, "exec", None)
    if not callable(run):
        return None

    async def execute(command: str, cwd: str, on_data: Callable[[bytes], None], signal: Any, timeout: float | None,
                      env: Mapping[str, str]) -> int | None:
        def feed(data: Any) -> None:
            on_data(data.encode("utf-8") if isinstance(data, str) else bytes(data))

        outcome = run(command, cwd, on_data=feed, signal=signal, timeout=timeout, env=dict(env))
        if inspect.isawaitable(outcome):
            outcome = await outcome
        code = outcome.get("exitCode") if isinstance(outcome, Mapping) else getattr(outcome, "exitCode", None)
        return code if isinstance(code, int) and not isinstance(code, bool) else None

    return execute
