"""The second runner: TypeScript/JavaScript extensions hosted in Node, as
:class:`~rpcd.runtime.extensions.registry.Extension` records in the session's one
:class:`~rpcd.runtime.extensions.runner.ExtensionRunner`.

:class:`NodeExtensions` is the :class:`~rpcd.runtime.extensions.loading.ScriptLoader`: it asks the host
to load a run of paths for a runner and turns what each extension registered into an ``Extension``
whose callables are requests down the pipe — a handler is ``invoke``, a tool ``tool``, a command
``command`` — so the runner combines their results with the Python ones' in load order, and every
value that comes back meets the same checks where it enters the session.

What the extensions call (``pi.*``, ``ctx.*``) arrives as requests and is answered by the same objects
a Python extension uses: a daemon-side :class:`~rpcd.runtime.extensions.python_runner.ExtensionAPI` per
TypeScript extension (``pi.sendMessage`` is ``api.send_message``, ``pi.exec`` is ``api.exec`` — the
sandbox and the environment policy of the bash tool), and the runner's ``ExtensionContext`` /
``ExtensionCommandContext`` for ``ctx`` (the UI, the session view, the model registry, session
control). A TypeScript ``pi`` or ``ctx`` kept past its session is stale the same way.

Calls into the host never hold the session forever: an event handler has a budget of host time
(``RPCD_EXTENSION_TIMEOUT`` seconds, 120 by default; time spent waiting for the daemon — a dialog,
an ``exec`` — does not count), a tool or a stream is given up a few seconds after its turn's abort,
and a host that dies or hangs fails every waiting call. Each failure is an ``extension_error`` (a
failed tool: an ``isError`` result), never an exception out of the runner.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectSendStream

from rpcd.core.codec import to_json
from rpcd.core.redact import redact
from rpcd.core.values import Diagnostic, ExtensionError

from ..context import ExtensionCommandContext, ExtensionContext, ReplacedSessionContext
from ..python_runner import ExtensionAPI
from ..registry import (
    Extension,
    FlagDefinition,
    FlagType,
    RegisteredCommand,
    RegisteredTool,
    ScriptError,
    ShortcutDefinition,
)
from ..runner import ExtensionRunner
from .connection import CallAbandoned, HostCallError, HostConnection, HostGone

__all__ = ["NodeExtensions"]

_log = logging.getLogger("rpcd.runtime.extensions.node")

KIND = "node"
HANDLER_BUDGET_S = float(os.environ.get("RPCD_EXTENSION_TIMEOUT", "120"))
"""Host time an event handler may take (its waits on the daemon not counted)."""
LOAD_BUDGET_S = 300.0
COMPLETE_BUDGET_S = 10.0
_rids = itertools.count(1)


def _failure(exc: Exception, what: str) -> ScriptError:
    """A call's failure as the extension error it is reported as."""
    if isinstance(exc, HostCallError):
        return ScriptError(exc.message)
    if isinstance(exc, HostGone):
        return ScriptError(f"{what}: {exc.reason}")
    return ScriptError(f"{what} gave no answer: {exc}")


class RemoteSignal:
    """An ``AbortSignal`` of the extension's own (``pi.exec(..., {signal})``), aborted when the host says."""

    def __init__(self, aborted: bool = False) -> None:
        self._event = anyio.Event()
        if aborted:
            self._event.set()

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def abort(self) -> None:
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()


class ScriptListener:
    """A TypeScript ``pi.events.on`` listener in the runner's bus: a Python emit reaches it through the
    host; the host's own emits run it there (``hosted_by``)."""

    def __init__(self, link: RunnerLink, listener_id: int) -> None:
        self.hosted_by = link.bridge
        self.listener_id = listener_id
        self._link = link

    def __call__(self, data: Any) -> None:
        self._link.bridge.notify("deliver", {"listener": self.listener_id, "data": data})


class HostedHandler:
    """An event handler of a TypeScript extension: called alone (``invoke``: its value and its changes
    to the event count), or with the host's other handlers of the event in one call (``run_batch``)."""

    def __init__(self, bridge: NodeExtensions, link: RunnerLink, ext_id: int, index: int, event_type: str) -> None:
        self.hosted_by = bridge
        self.link = link
        self.ext_id = ext_id
        self.index = index
        self.event_type = event_type

    async def __call__(self, event: dict[str, Any], ctx: Any) -> Any:
        return await self.hosted_by.invoke(self, event, ctx)


class RunnerLink:
    """One runner's TypeScript extensions in the host."""

    def __init__(self, bridge: NodeExtensions, runner: ExtensionRunner) -> None:
        self.bridge = bridge
        self.rid = next(_rids)
        self._runner = weakref.ref(runner)
        self.apis: dict[int, ExtensionAPI] = {}
        self.records: dict[int, Extension] = {}
        self.listeners: dict[int, Callable[[], None]] = {}
        self.objects: dict[int, Any] = {}
        """Contexts and session writers the host may use, by id, while they are live."""

    @property
    def runner(self) -> ExtensionRunner:
        runner = self._runner()
        if runner is None:
            raise _stale()
        return runner

    def api(self, ext: Any) -> ExtensionAPI:
        found = self.apis.get(ext) if isinstance(ext, int) else None
        if found is None:
            raise KeyError("unknown extension")
        return found


class NodeExtensions:
    """The script loader over one host process (see the module doc)."""

    def __init__(self, connection: HostConnection, task_group: anyio.abc.TaskGroup, agent_dir: str,
                 mode_of: Callable[[ExtensionRunner], tuple[str, bool]] | None = None) -> None:
        self.connection = connection
        self._task_group = task_group
        self.agent_dir = agent_dir
        self._links: dict[int, RunnerLink] = {}
        self._ids = itertools.count(1)
        self._updates: dict[int, Callable[[Mapping[str, Any]], None]] = {}
        self._streams: dict[int, MemoryObjectSendStream[Any]] = {}
        self._remote_signals: dict[int, RemoteSignal] = {}
        self._signal_ids: dict[int, tuple[int, weakref.ref[Any]]] = {}
        self._watchers: dict[int, anyio.CancelScope] = {}
        self._shared: dict[int, tuple[RunnerLink | None, Any]] = {}
        """Contexts that outlive the call that made them (``withSession``'s), by id."""

    # -- the wire ------------------------------------------------------------------------------------

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        self.connection.notify(method, params)

    def next_id(self) -> int:
        return next(self._ids)

    # -- loading -------------------------------------------------------------------------------------

    async def load(self, runner: ExtensionRunner, paths: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Diagnostic]:
        link = self._link_for(runner)
        try:
            answer = await self.connection.request("load", {
                "runner": link.rid, "cwd": runner.cwd, "agentDir": runner.agent_dir, "flags": runner.flag_values(),
                "extensions": [{"path": path, "sourceInfo": to_json(dict(info))} for path, info in paths],
            }, budget=LOAD_BUDGET_S)
        except (HostCallError, HostGone, CallAbandoned) as exc:
            reason = _failure(exc, "the extension host").message
            return [Diagnostic("error", f'Failed to load extension "{path}": {redact(reason)}') for path, _ in paths]
        infos = dict(paths)
        out: list[Diagnostic] = []
        for item in answer.get("extensions") or ():
            path = str(item.get("path"))
            if "error" in item:
                out.append(Diagnostic("error", f'Failed to load extension "{path}": {redact(str(item["error"]))}'))
                continue
            out += self._add(link, int(item["id"]), path, infos.get(path, {}), item.get("registered") or {})
        return out

    def _link_for(self, runner: ExtensionRunner) -> RunnerLink:
        for link in self._links.values():
            if link._runner() is runner:
                return link
        link = RunnerLink(self, runner)
        self._links[link.rid] = link
        runner.on_invalidate.append(lambda: self._invalidate(link))
        return link

    def _invalidate(self, link: RunnerLink) -> None:
        self._links.pop(link.rid, None)
        for rid, (owner, _) in list(self._shared.items()):
            if owner is link:
                del self._shared[rid]
        link.objects.clear()
        link.apis.clear()
        self.notify("invalidate", {"runner": link.rid})

    def _add(self, link: RunnerLink, ext_id: int, path: str, info: Mapping[str, Any],
             registered: Mapping[str, Any]) -> list[Diagnostic]:
        runner = link.runner
        extension = Extension(path=path, source_info=dict(info) or {"path": path, "source": "local",
                                                                     "scope": "temporary", "origin": "top-level"},
                              kind=KIND)
        api = ExtensionAPI(runner, extension)
        link.apis[ext_id] = api
        link.records[ext_id] = extension
        for kind in ("handlers", "tools", "commands", "shortcuts", "flags", "renderers"):
            for spec in registered.get(kind) or ():
                self._register(link, ext_id, extension, kind, spec)
        for op in registered.get("providers") or ():
            self._provider_change(link, ext_id, api, op)
        for channel, listener_id in registered.get("listeners") or ():
            self._subscribe(link, path, channel, listener_id)
        existing = runner.tools
        for name in extension.tools:
            other = existing.get(name)
            if other is not None:
                runner.warn(f'Extension "{path}": tool "{name}" conflicts with "{other.extension_path}"; '
                            "keeping the first")
        runner.add(extension)
        api._commit()
        return []

    # -- registrations -------------------------------------------------------------------------------

    def _register(self, link: RunnerLink, ext_id: int, extension: Extension, kind: str, spec: Any) -> None:
        path = extension.path
        if kind == "handlers":
            event, index = str(spec[0]), int(spec[1])
            extension.on(event, self._handler(link, ext_id, index, event))
        elif kind == "tools":
            tool = self._tool(link, ext_id, path, spec)
            extension.tools[tool.name] = tool
        elif kind == "commands":
            name = str(spec.get("name"))
            completer = self._completer(link, ext_id, name) if spec.get("completions") else None
            extension.commands[name] = RegisteredCommand(
                name, _text(spec.get("description")), self._command(link, ext_id, name), path,
                _text(spec.get("argumentHint")), completer)
        elif kind == "shortcuts":
            shortcut = str(spec.get("shortcut"))

            async def never(ctx: Any) -> None:  # Pi's terminal keys: an RPC client has none
                return None

            extension.shortcuts[shortcut] = ShortcutDefinition(shortcut, _text(spec.get("description")), never, path)
        elif kind == "flags":
            flag_type: FlagType = "string" if spec.get("type") == "string" else "boolean"
            default = spec.get("default")
            flag = FlagDefinition(str(spec.get("name")), flag_type,
                                  default if isinstance(default, bool | str) else None,
                                  str(spec.get("description") or ""), path)
            extension.flags[flag.name] = flag
        elif kind == "renderers":
            extension.renderers.add(str(spec))

    def _subscribe(self, link: RunnerLink, extension_path: str, channel: Any, listener_id: Any) -> None:
        """A TypeScript ``pi.events.on``: its listener joins the runner's bus."""
        listener = ScriptListener(link, int(listener_id))
        link.listeners[listener.listener_id] = link.runner.events.on(str(channel), listener,
                                                                     extension_path=extension_path)

    def _register_later(self, link: RunnerLink, ext_id: int, kind: str, spec: Any) -> None:
        """A registration made after loading (from a handler): Pi's runtime.refreshTools and the flag's
        default at once."""
        extension = link.records[ext_id]
        self._register(link, ext_id, extension, kind, spec)
        runner = link.runner
        if kind == "tools":
            runner.tools_changed()
        elif kind == "flags":
            runner.flag_registered(extension, extension.flags[str(spec.get("name"))])

    def _provider_change(self, link: RunnerLink, ext_id: int, api: ExtensionAPI, op: Any) -> None:
        if op[0] == "unregister":
            api.unregister_provider(str(op[1]))
            return
        entry = op[1]
        config = dict(entry.get("config") or {})
        stream = entry.get("stream")
        if isinstance(stream, int):
            config["streamSimple"] = self._stream(link, stream)
        api.register_provider(str(entry.get("name")), config)

    # -- the callables of an Extension -----------------------------------------------------------------

    def _ctx_ref(self, link: RunnerLink, ctx: Any, kind: str) -> tuple[dict[str, Any], int]:
        object_id = self.next_id()
        link.objects[object_id] = ctx
        bindings = link.runner.bindings
        has_ui = bool(ctx.has_ui) if bindings is not None else False
        return {"runner": link.rid, "kind": kind, "id": object_id, "cwd": link.runner.cwd,
                "mode": bindings.mode if bindings is not None else "rpc", "hasUI": has_ui}, object_id

    def _handler(self, link: RunnerLink, ext_id: int, index: int, event_type: str) -> HostedHandler:
        return HostedHandler(self, link, ext_id, index, event_type)

    async def invoke(self, handler: HostedHandler, event: dict[str, Any], ctx: Any) -> Any:
        """One handler, its value and its changes to the event (``tool_call``'s input ...) written back."""
        link = handler.link
        ref, object_id = self._ctx_ref(link, ctx, "event")
        sent = {k: v for k, v in event.items() if k != "signal"}
        try:
            answer = await self.connection.request(
                "invoke", {"ext": handler.ext_id, "handler": handler.index, "event": sent, "ctx": ref},
                budget=HANDLER_BUDGET_S, signal=_turn_signal(ctx))
        except (HostCallError, HostGone, CallAbandoned) as exc:
            raise _failure(exc, f"{handler.event_type} handler") from None
        finally:
            link.objects.pop(object_id, None)
        for key, value in (answer.get("changed") or {}).items():
            _write_back(event, key, value)
        return answer.get("result")

    def run_batch(self, handlers: Sequence[tuple[Extension, Any]], event: Mapping[str, Any],
                  ctx: Any) -> Awaitable[list[tuple[Extension, BaseException]]]:
        """The runner's :class:`~rpcd.runtime.extensions.registry.HandlerHost`: handlers of one event
        (values unused) in one request, sent now; the host runs them one after the other."""
        hosted = [(extension, handler) for extension, handler in handlers if isinstance(handler, HostedHandler)]
        link = hosted[0][1].link
        ref, object_id = self._ctx_ref(link, ctx, "event")
        sent = {k: v for k, v in event.items() if k != "signal"}
        event_type = str(event.get("type"))
        started = self.connection.start(
            "invokeAll", {"handlers": [[h.ext_id, h.index] for _, h in hosted], "event": sent, "ctx": ref},
            budget=HANDLER_BUDGET_S * len(hosted), signal=_turn_signal(ctx))

        async def answered() -> list[tuple[Extension, BaseException]]:
            try:
                answer = await started
            except (HostCallError, HostGone, CallAbandoned) as exc:
                return [(extension, _failure(exc, f"{event_type} handler")) for extension, _ in hosted]
            finally:
                link.objects.pop(object_id, None)
            errors = answer.get("errors") if isinstance(answer, Mapping) else None
            return [(hosted[i][0], ScriptError(str(message))) for i, message in enumerate(errors or ())
                    if message is not None and i < len(hosted)]

        return answered()

    def _tool(self, link: RunnerLink, ext_id: int, path: str, spec: Mapping[str, Any]) -> RegisteredTool:
        name = str(spec.get("name"))

        async def execute(tool_call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any) -> Any:
            ref, object_id = self._ctx_ref(link, ctx, "event")
            updates = self.next_id()
            self._updates[updates] = on_update
            signal_id = self._lend_signal(signal)
            try:
                return await self.connection.request(
                    "tool", {"ext": ext_id, "name": name, "toolCallId": tool_call_id, "params": params,
                             "signal": signal_id, "updates": updates, "ctx": ref}, signal=signal)
            except (HostCallError, HostGone, CallAbandoned) as exc:
                raise _failure(exc, f"tool {name}") from None
            finally:
                link.objects.pop(object_id, None)
                self._updates.pop(updates, None)
                self._return_signal(signal_id)

        prepare = None
        if spec.get("prepareArguments"):
            async def prepare(args: Any) -> Any:
                try:
                    return await self.connection.request("prepare", {"ext": ext_id, "name": name, "args": args},
                                                         budget=HANDLER_BUDGET_S)
                except (HostCallError, HostGone, CallAbandoned) as exc:
                    raise _failure(exc, f"prepareArguments of {name}") from None

        guidelines = spec.get("promptGuidelines")
        mode = spec.get("executionMode")
        return RegisteredTool(
            name=name, label=_text(spec.get("label")) or name, description=str(spec.get("description") or ""),
            parameters=spec.get("parameters") or {"type": "object", "properties": {}}, execute=execute,
            extension_path=path, prompt_snippet=_text(spec.get("promptSnippet")),
            prompt_guidelines=tuple(g for g in guidelines if isinstance(g, str)) if isinstance(guidelines, list)
            else (), prepare_arguments=prepare, execution_mode=mode if mode in ("sequential", "parallel") else None)

    def _command(self, link: RunnerLink, ext_id: int, name: str) -> Callable[..., Any]:
        async def run(args: str, ctx: Any) -> None:
            ref, object_id = self._ctx_ref(link, ctx, "command")
            try:
                await self.connection.request("command", {"ext": ext_id, "name": name, "args": args, "ctx": ref})
            except (HostCallError, HostGone, CallAbandoned) as exc:
                raise _failure(exc, f"command {name}") from None
            finally:
                link.objects.pop(object_id, None)

        return run

    def _completer(self, link: RunnerLink, ext_id: int, name: str) -> Callable[..., Any]:
        async def complete(prefix: str) -> Any:
            try:
                return await self.connection.request("complete", {"ext": ext_id, "name": name, "prefix": prefix},
                                                     budget=COMPLETE_BUDGET_S)
            except (HostCallError, HostGone, CallAbandoned) as exc:
                raise _failure(exc, f"completions of {name}") from None

        return complete

    def _stream(self, link: RunnerLink, stream_id: int) -> Callable[..., AsyncIterator[dict[str, Any]]]:
        """A provider's ``streamSimple`` in the host, as the ``stream_simple`` of an extension provider."""

        async def stream_simple(model: Any, context: Any, options: Mapping[str, Any]) -> AsyncIterator[dict[str, Any]]:
            sent_options = {k: v for k, v in options.items() if not callable(v)}
            events = self.next_id()
            send, receive = anyio.create_memory_object_stream[Any](math.inf)
            self._streams[events] = send
            signal = RemoteSignal()
            signal_id = self._lend_signal(signal)
            outcome: dict[str, BaseException] = {}

            async def run() -> None:
                try:
                    await self.connection.request("stream", {"stream": stream_id, "events": events, "model": model,
                                                             "context": context, "options": sent_options,
                                                             "signal": signal_id})
                except (HostCallError, HostGone, CallAbandoned) as exc:
                    outcome["error"] = _failure(exc, "the provider's stream")
                finally:
                    await send.aclose()

            self._task_group.start_soon(run)
            try:
                async with receive:
                    async for event in receive:
                        yield event
                error = outcome.get("error")
                if error is not None:
                    yield {"type": "error", "reason": "error",
                           "error": {"role": "assistant", "content": [], "api": model.get("api"),
                                     "provider": model.get("provider"), "model": model.get("id"),
                                     "stopReason": "error", "errorMessage": str(error)}}
            finally:
                signal.abort()
                self._streams.pop(events, None)
                self._return_signal(signal_id)

        return stream_simple

    # -- signals lent to the host -------------------------------------------------------------------------

    def _lend_signal(self, signal: Any) -> int | None:
        """The host's id for ``signal`` (an abort signal of the daemon's), watched until returned."""
        if signal is None:
            return None
        key = id(signal)
        known = self._signal_ids.get(key)
        if known is not None and known[1]() is signal:
            return known[0]
        signal_id = self.next_id()
        with contextlib.suppress(TypeError):  # a signal that cannot be weakly referenced is not shared
            self._signal_ids[key] = (signal_id, weakref.ref(signal))
        if bool(getattr(signal, "aborted", False)):
            self.notify("abort", {"signal": signal_id})
            return signal_id
        scope = anyio.CancelScope()
        self._watchers[signal_id] = scope

        async def watch() -> None:
            with scope:
                await signal.wait()
                self.notify("abort", {"signal": signal_id})
            self._watchers.pop(signal_id, None)

        self._task_group.start_soon(watch)
        return signal_id

    def _return_signal(self, signal_id: int | None) -> None:
        if signal_id is None:
            return
        for key, (known, _) in list(self._signal_ids.items()):
            if known == signal_id:
                del self._signal_ids[key]
        scope = self._watchers.pop(signal_id, None)
        if scope is not None:
            scope.cancel()
        self.notify("forget", {"signals": [signal_id]})

    # -- what the host sends ---------------------------------------------------------------------------

    def listen(self, method: str, params: dict[str, Any]) -> None:
        if method == "update":
            on_update = self._updates.get(_key(params, "updates"))
            partial = params.get("partial")
            if on_update is not None and isinstance(partial, Mapping):
                on_update(partial)
        elif method == "streamed":
            send = self._streams.get(_key(params, "stream"))
            if send is not None:
                send.send_nowait(params.get("event"))
        elif method == "abort":
            remote = self._remote_signals.pop(_key(params, "signal"), None)
            if remote is not None:
                remote.abort()
        elif method == "off":
            link = self._links.get(_key(params, "runner"))
            unsubscribe = link.listeners.pop(_key(params, "listener"), None) if link else None
            if unsubscribe is not None:
                unsubscribe()
        elif method == "error":
            link = self._links.get(_key(params, "runner"))
            message = redact(str(params.get("message") or "an error"))
            if link is not None:
                link.runner.report_error(ExtensionError(str(params.get("ext") or "<extension host>"),
                                                        str(params.get("event") or "error"), message))
            else:
                _log.warning("extension host: %s", message)

    async def serve(self, method: str, params: dict[str, Any]) -> Any:
        key = params.get("runner") if method == "api" else (params.get("ctx") or {}).get("runner")
        link = self._links.get(key) if isinstance(key, int) else None
        if method == "api":
            if link is None:
                raise _stale()
            name, args = str(params.get("name")), list(params.get("args") or [])
            if name == "emit":  # also while loading (Pi's bus is there from the start)
                return link.runner.events.emit(str(args[0] if args else ""), args[1] if len(args) > 1 else None,
                                               hosted=self)
            return await self._api(link, link.api(params.get("ext")), name, args)
        if method == "ctx":
            ref = params.get("ctx") or {}
            return await self._ctx(link, ref, str(params.get("name")), list(params.get("args") or []))
        raise LookupError(f"unknown method {method}")

    # -- pi.* -------------------------------------------------------------------------------------------

    async def _api(self, link: RunnerLink, api: ExtensionAPI, name: str, args: list[Any]) -> Any:
        def arg(index: int, default: Any = None) -> Any:
            return args[index] if len(args) > index and args[index] is not None else default

        options = arg(1, {}) if isinstance(arg(1, {}), Mapping) else {}
        if name == "sendMessage":
            api.send_message(arg(0), trigger_turn=options.get("triggerTurn"), deliver_as=options.get("deliverAs"))
        elif name == "sendUserMessage":
            api.send_user_message(arg(0), deliver_as=options.get("deliverAs"),
                                  expand_prompt_templates=options.get("expandPromptTemplates") is True)
        elif name == "appendEntry":
            api.append_entry(arg(0), arg(1))
        elif name == "setSessionName":
            api.set_session_name(arg(0))
        elif name == "getSessionName":
            return api.get_session_name()
        elif name == "setLabel":
            api.set_label(arg(0), arg(1))
        elif name == "getActiveTools":
            return api.get_active_tools()
        elif name == "getAllTools":
            return api.get_all_tools()
        elif name == "setActiveTools":
            names = arg(0, [])
            if not isinstance(names, list):
                raise TypeError("setActiveTools: tool names must be a list of strings")
            api.set_active_tools(names)
        elif name == "getCommands":
            return api.get_commands()
        elif name == "getThinkingLevel":
            return api.get_thinking_level()
        elif name == "setThinkingLevel":
            api.set_thinking_level(arg(0))
        elif name == "setModel":
            return await api.set_model(arg(0, {}))
        elif name == "getFlag":
            return api.get_flag(str(arg(0)))
        elif name == "exec":
            exec_options = arg(2, {}) if isinstance(arg(2, {}), Mapping) else {}
            signal = None
            lent = exec_options.get("signal")
            if isinstance(lent, Mapping) and isinstance(lent.get("id"), int):
                signal = self._remote_signals.setdefault(lent["id"], RemoteSignal(bool(lent.get("aborted"))))
            timeout = exec_options.get("timeout")
            argv = arg(1, [])
            return await api.exec(arg(0), argv if isinstance(argv, list) else [], cwd=exec_options.get("cwd"),
                                  timeout=timeout if isinstance(timeout, int | float) else None, signal=signal)
        elif name == "registerProvider":
            self._provider_change(link, _ext_of(link, api), api, ["register", arg(0, {})])
        elif name == "unregisterProvider":
            api.unregister_provider(arg(0))
        elif name == "on":
            self._subscribe(link, api.extension_path, arg(0), arg(1))
        elif name == "register":
            self._register_later(link, _ext_of(link, api), str(arg(0)), arg(1))
        else:
            raise LookupError(f"pi.{name} is not part of the extension API")
        return None

    # -- ctx.* ------------------------------------------------------------------------------------------

    def _context(self, link: RunnerLink | None, ref: Mapping[str, Any]) -> Any:
        object_id = ref.get("id")
        if link is not None:
            found = link.objects.get(object_id) if isinstance(object_id, int) else None
            if found is not None:
                return found
            if ref.get("kind") == "command":
                return ExtensionCommandContext(link.runner)
            return ExtensionContext(link.runner)
        shared = self._shared.get(object_id) if isinstance(object_id, int) else None
        if shared is not None:
            return shared[1]
        raise _stale()

    async def _ctx(self, link: RunnerLink | None, ref: Mapping[str, Any], name: str, args: list[Any]) -> Any:
        ctx = self._context(link, ref)

        def arg(index: int, default: Any = None) -> Any:
            return args[index] if len(args) > index and args[index] is not None else default

        group, _, member = name.partition(".")
        if group == "ui" and member:
            return await self._ui(ctx, member, args)
        if group == "sm" and member:
            return _call_view(ctx.session_manager, member, args)
        if group == "writer" and member:
            return _call_writer(ctx, member, args)
        if group == "models" and member:
            registry = ctx.model_registry
            if member == "getAll":
                return registry.get_all()
            if member == "getAvailable":
                return registry.get_available()
            if member == "find":
                return registry.find(str(arg(0)), str(arg(1)))
            raise LookupError(f"ctx.modelRegistry.{member} is not available")
        simple: dict[str, Callable[[], Any]] = {
            "model": lambda: ctx.model, "scopedModels": lambda: ctx.scoped_models,
            "thinkingLevel": lambda: ctx.thinking_level, "isIdle": ctx.is_idle,
            "isProjectTrusted": ctx.is_project_trusted, "abort": ctx.abort,
            "hasPendingMessages": ctx.has_pending_messages, "shutdown": ctx.shutdown,
            "getContextUsage": ctx.get_context_usage, "getSystemPrompt": ctx.get_system_prompt,
        }
        if name in simple:
            return simple[name]()
        if name == "signal":
            signal = ctx.signal
            return None if signal is None else self._lend_signal(signal)
        if name == "compact":
            return self._compact(ctx, arg(0, {}), link)
        if not isinstance(ctx, ExtensionCommandContext):
            raise AttributeError(f"ctx.{name} is only available to commands")
        if name == "getSystemPromptOptions":
            return ctx.get_system_prompt_options()
        if name == "waitForIdle":
            await ctx.wait_for_idle()
            return None
        if name == "newSession":
            options = arg(0, {})
            setup = options.get("setup")
            result = await ctx.new_session(parent_session=options.get("parentSession"),
                                           setup=self._setup_callback(setup) if isinstance(setup, int) else None,
                                           with_session=self._with_session(options.get("withSession")))
            return _replaced(result)
        if name == "fork":
            options = arg(1, {})
            result = await ctx.fork(arg(0), position=options.get("position") or "before",
                                    with_session=self._with_session(options.get("withSession")))
            return _replaced(result)
        if name == "switchSession":
            options = arg(1, {})
            result = await ctx.switch_session(arg(0), with_session=self._with_session(options.get("withSession")))
            return _replaced(result)
        if name == "navigateTree":
            options = arg(1, {})
            return await ctx.navigate_tree(arg(0), summarize=options.get("summarize") is True,
                                           custom_instructions=options.get("customInstructions"),
                                           replace_instructions=options.get("replaceInstructions"),
                                           label=options.get("label"))
        if name == "reload":
            await ctx.reload()
            return None
        if isinstance(ctx, ReplacedSessionContext) and name in ("sendMessage", "sendUserMessage"):
            options = arg(1, {})
            if name == "sendMessage":
                await ctx.send_message(arg(0), trigger_turn=options.get("triggerTurn"),
                                       deliver_as=options.get("deliverAs"))
            else:
                await ctx.send_user_message(arg(0), deliver_as=options.get("deliverAs"),
                                            expand_prompt_templates=options.get("expandPromptTemplates") is True)
            return None
        raise LookupError(f"ctx.{name} is not part of the extension API")

    async def _ui(self, ctx: Any, member: str, args: list[Any]) -> Any:
        ui = ctx.ui
        if ui is None:
            return None

        def arg(index: int, default: Any = None) -> Any:
            return args[index] if len(args) > index and args[index] is not None else default

        def wait(index: int) -> float | None:
            options = arg(index, {})
            timeout = options.get("timeout") if isinstance(options, Mapping) else None
            return float(timeout) if isinstance(timeout, int | float) and not isinstance(timeout, bool) else None

        if member == "notify":
            ui.notify(arg(0, ""), arg(1, "info"))
        elif member == "setStatus":
            ui.set_status(arg(0, ""), arg(1))
        elif member == "setWidget":
            ui.set_widget(arg(0, ""), arg(1), arg(2, "aboveEditor"))
        elif member == "setTitle":
            ui.set_title(arg(0, ""))
        elif member == "setEditorText":
            ui.set_editor_text(arg(0, ""))
        elif member == "select":
            return await ui.select(arg(0, ""), arg(1, []), timeout_ms=wait(2))
        elif member == "confirm":
            return await ui.confirm(arg(0, ""), arg(1, ""), timeout_ms=wait(2))
        elif member == "input":
            return await ui.input(arg(0, ""), arg(1), timeout_ms=wait(2))
        elif member == "editor":
            return await ui.editor(arg(0, ""), arg(1))
        elif member == "custom":
            return await ui.custom(None)
        else:
            raise LookupError(f"ctx.ui.{member} is not available")
        return None

    # -- callbacks into the host (setup, withSession, onComplete, onError) ----------------------------------

    async def _callback(self, callback_id: int, **argument: Any) -> Any:
        try:
            return await self.connection.request("callback", {"callback": callback_id, **argument})
        except (HostCallError, HostGone, CallAbandoned) as exc:
            raise _failure(exc, "the extension's callback") from None
        finally:
            self.notify("forget", {"callbacks": [callback_id]})

    def _setup_callback(self, callback_id: int) -> Callable[[Any], Any]:
        async def setup(writer: Any) -> None:
            object_id = self.next_id()
            self._shared[object_id] = (None, writer)
            try:
                await self._callback(callback_id, writer={"runner": 0, "kind": "writer", "id": object_id})
            finally:
                self._shared.pop(object_id, None)

        return setup

    def _with_session(self, callback_id: Any) -> Callable[[Any], Any] | None:
        if not isinstance(callback_id, int):
            return None

        async def with_session(new_ctx: Any) -> None:
            object_id = self.next_id()
            runner = new_ctx._live()
            owner = next((link for link in self._links.values() if link._runner() is runner), None)
            self._shared[object_id] = (owner, new_ctx)
            runner.on_invalidate.append(lambda: self._shared.pop(object_id, None))
            bindings = runner.bindings
            ref = {"runner": owner.rid if owner is not None else -object_id, "kind": "replaced", "id": object_id,
                   "cwd": runner.cwd, "mode": bindings.mode if bindings is not None else "rpc",
                   "hasUI": bool(new_ctx.has_ui)}
            await self._callback(callback_id, ctx=ref)

        return with_session

    def _compact(self, ctx: Any, options: Mapping[str, Any], link: RunnerLink | None) -> None:
        on_complete, on_error = options.get("onComplete"), options.get("onError")
        done = [c for c in (on_complete, on_error) if isinstance(c, int)]

        async def complete(result: Any) -> None:
            if isinstance(on_complete, int):
                await self._callback(on_complete, value=to_json(result))
            self.notify("forget", {"callbacks": done})

        async def failed(error: BaseException) -> None:
            if isinstance(on_error, int):
                await self._callback(on_error, error=getattr(error, "reason", None) or str(error))
            self.notify("forget", {"callbacks": done})

        ctx.compact(options.get("customInstructions"), on_complete=complete, on_error=failed)


# -- helpers ------------------------------------------------------------------------------------------------


def _stale() -> Exception:
    from rpcd.core.errors import SessionDisposedError

    from ..context import STALE_MESSAGE

    return SessionDisposedError(STALE_MESSAGE)


def _ext_of(link: RunnerLink, api: ExtensionAPI) -> int:
    return next(ext for ext, found in link.apis.items() if found is api)


def _key(params: Mapping[str, Any], name: str) -> int:
    """An id the host sent (``-1``, which names nothing, when it is not an integer)."""
    value = params.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _turn_signal(ctx: Any) -> Any:
    try:
        return ctx.signal
    except Exception:
        return None


def _write_back(event: dict[str, Any], key: str, value: Any) -> None:
    """A handler changed ``event[key]`` in place in the host: the same change here, in place (the
    runner holds the very dict or list it passed)."""
    current = event.get(key)
    if isinstance(current, dict) and isinstance(value, dict):
        missing = [k for k in current if k not in value]
        current.clear()
        current.update(value)
        if key == "headers":
            for name in missing:  # a header the handler deleted: deleted from the request
                current[name] = None
    elif isinstance(current, list) and isinstance(value, list):
        current[:] = value
    else:
        event[key] = value


def _replaced(result: Any) -> dict[str, Any]:
    return {"cancelled": bool(result.cancelled)}


_VIEW = {"getCwd": "get_cwd", "getSessionDir": "get_session_dir", "getSessionId": "get_session_id",
         "getSessionFile": "get_session_file", "getLeafId": "get_leaf_id", "getLeafEntry": "get_leaf_entry",
         "getEntry": "get_entry", "getLabel": "get_label", "getBranch": "get_branch",
         "buildContextEntries": "build_context_entries", "getHeader": "get_header", "getEntries": "get_entries",
         "getTree": "get_tree", "getSessionName": "get_session_name"}
_WRITER = {"appendMessage": "append_message", "appendCustomEntry": "append_custom_entry",
           "appendCustomMessageEntry": "append_custom_message_entry", "appendLabelChange": "append_label_change",
           "appendSessionInfo": "append_session_info", **_VIEW}


def _call_view(view: Any, member: str, args: list[Any]) -> Any:
    method = _VIEW.get(member)
    if method is None:
        raise LookupError(f"ctx.sessionManager.{member} is not available (the session manager is read-only)")
    return getattr(view, method)(*args)


def _call_writer(writer: Any, member: str, args: list[Any]) -> Any:
    method = _WRITER.get(member)
    if method is None:
        raise LookupError(f"sessionManager.{member} is not available in setup")
    return getattr(writer, method)(*args)
