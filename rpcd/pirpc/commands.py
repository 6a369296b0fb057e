"""Pi's 33 RPC commands, each one call of the session service (the serialized host).

A command line is handled at its arrival, as Pi handles it (every line at once, none waiting for
the one before): its call takes its place in the host's FIFO right then — through the door the
method table gives the matching rpcd method (``rpcd.protocol.methods.session_door``), the same
door the JSON-RPC and ACP fronts take — and its answer is written once the call settles, after
every line the call produced. What is Pi's here is only the wire: the command's fields, the
``data`` of its answer in Pi's shapes, and Pi's words where Pi words a refusal itself. The mapping
table (Pi command -> session call) is in docs/pi-compat.md ("Pi's own RPC wire").

``prompt`` answers when the prompt is accepted (Pi's ``preflightResult``): when its turn is about
to begin, when it was queued into a running turn, or when the command it named has run; a failure
after that is the turn's and comes as its events, never as a second answer.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Final, TypeAlias

import anyio
import anyio.abc
import anyio.lowlevel

from rpcd.core.errors import CompactionError, RpcdError, SessionBusyError
from rpcd.core.jstext import js_trim, js_truthy
from rpcd.core.values import (
    BashOutcome,
    CommandInfo,
    CycleModelResult,
    ImageInput,
    ModelDescription,
    SessionState,
    SessionStats,
)
from rpcd.host.host import Pending, ReplacementOutcome, SerializedHost
from rpcd.host.port import SessionPort
from rpcd.pirpc.output import LineOut
from rpcd.protocol.methods import session_door
from rpcd.protocol.names import (
    ABORT,
    ABORT_BASH,
    ABORT_RETRY,
    BASH,
    CLEAR_QUEUE,
    COMPACT,
    CYCLE_MODEL,
    CYCLE_THINKING_LEVEL,
    EXPORT_HTML,
    FOLLOW_UP,
    GET_AVAILABLE_MODELS,
    GET_AVAILABLE_THINKING_LEVELS,
    GET_COMMANDS,
    GET_ENTRIES,
    GET_FORK_MESSAGES,
    GET_LAST_ASSISTANT_TEXT,
    GET_MESSAGES,
    GET_SESSION_STATS,
    GET_TREE,
    PROMPT,
    SET_AUTO_COMPACTION,
    SET_AUTO_RETRY,
    SET_FOLLOW_UP_MODE,
    SET_MODEL,
    SET_SESSION_NAME,
    SET_STEERING_MODE,
    SET_THINKING_LEVEL,
    STEER,
)

__all__ = ["COMMANDS", "MISSING", "PiCommands", "failure", "js_string", "success"]

log = logging.getLogger("rpcd.pirpc")


class _Missing:
    """JavaScript's ``undefined``: a key left out of the line written."""

    def __repr__(self) -> str:
        return "undefined"


MISSING: Final = _Missing()
Command: TypeAlias = Mapping[str, Any]
Data: TypeAlias = Any
"""An answer's ``data`` (``MISSING``: an answer without ``data``; ``None`` is JSON ``null``)."""

BUSY: Final = ("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the "
               "message.")
"""Pi's words for a ``prompt`` without ``streamingBehavior`` while a turn runs."""
COMPACTION_FAILED: Final = "Compaction failed: "
"""The prefix of ``compaction_end``'s ``errorMessage``, which Pi's ``compact`` answer does not have."""
NO_LEAF: Final = "Cannot clone session: no current entry selected"
EMPTY_NAME: Final = "Session name cannot be empty"


class PiError(Exception):
    """A refusal worded as Pi words it (the answer's ``error``)."""


def js_string(value: Any) -> str:
    """``String(value)`` of a parsed JSON value, as Pi's template strings show it."""
    if value is MISSING:
        return "undefined"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        from rpcd.core.codec import js_number

        return js_number(value).decode() if value == value and abs(value) != float("inf") else (
            "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity"))
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    return "[object Object]"


def success(command_id: Any, command: Any, data: Data = MISSING) -> dict[str, Any]:
    """Pi's ``success(id, command, data)`` (an ``undefined`` id, command or data is left out)."""
    line: dict[str, Any] = {}
    if command_id is not MISSING:
        line["id"] = command_id
    line["type"] = "response"
    if command is not MISSING:
        line["command"] = command
    line["success"] = True
    if data is not MISSING:
        line["data"] = data
    return line


def failure(command_id: Any, command: Any, message: str) -> dict[str, Any]:
    """Pi's ``error(id, command, message)``."""
    line: dict[str, Any] = {}
    if command_id is not MISSING:
        line["id"] = command_id
    line["type"] = "response"
    if command is not MISSING:
        line["command"] = command
    line["success"] = False
    line["error"] = message
    return line


def message_of(error: BaseException) -> str:
    """The ``error`` text of a failed call: Pi's words where Pi has its own, else the failure's own
    (a flat group: its primary failure's)."""
    if isinstance(error, PiError):
        return str(error)
    if isinstance(error, BaseExceptionGroup) and error.exceptions:
        return message_of(error.exceptions[0])
    if isinstance(error, SessionBusyError) and "streamingBehavior" in str(error):
        return BUSY
    if isinstance(error, CompactionError) and error.message.startswith(COMPACTION_FAILED):
        return error.message[len(COMPACTION_FAILED):]  # Pi's compact() throws the reason itself
    if isinstance(error, RpcdError):
        return error.message
    return str(error) or type(error).__name__


def _field(command: Command, key: str) -> Any:
    return command.get(key, MISSING)


def _text(value: Any, reading: str, name: str) -> str:
    """A field Pi uses as a string (``name.<reading>(...)``), refused with the ``TypeError`` Pi's code
    throws for anything else."""
    if isinstance(value, str):
        return value
    if value is MISSING or value is None:
        raise PiError(f"Cannot read properties of {js_string(value)} (reading '{reading}')")
    raise PiError(f"{name}.{reading} is not a function")


def _images(value: Any) -> tuple[ImageInput, ...]:
    """Pi's ``ImageContent`` list (``{type: "image", data, mimeType}``); anything else is refused by
    the session's image check before anything is recorded (rpcd checks images; docs/pi-compat.md)."""
    if value is MISSING or value is None:
        return ()
    if not isinstance(value, list):
        raise PiError("images must be an array of {type: \"image\", data, mimeType}")
    out = []
    for image in value:
        if not isinstance(image, Mapping) or not isinstance(image.get("data"), str) \
                or not isinstance(image.get("mimeType"), str):
            raise PiError("images must be an array of {type: \"image\", data, mimeType}")
        out.append(ImageInput(data=image["data"], mime_type=image["mimeType"]))
    return tuple(out)


# -- Pi's data shapes ------------------------------------------------------------------------------


def state_data(state: SessionState) -> dict[str, Any]:
    """``get_state``'s data, in Pi's key order (an ``undefined`` field left out)."""
    data: dict[str, Any] = {
        "model": state.pi_model,
        "thinkingLevel": state.thinking_level,
        "isStreaming": state.is_streaming,
        "isCompacting": state.is_compacting,
        "steeringMode": state.steering_mode,
        "followUpMode": state.follow_up_mode,
    }
    if state.session_file is not None:
        data["sessionFile"] = state.session_file
    data["sessionId"] = state.session_id
    if state.name is not None:
        data["sessionName"] = state.name
    data["autoCompactionEnabled"] = state.auto_compaction_enabled
    data["messageCount"] = state.message_count
    data["pendingMessageCount"] = state.pending_message_count
    return data


def _model(description: ModelDescription) -> Any:
    return description.pi_model


def _cycled(result: CycleModelResult | None) -> Data:
    if result is None:
        return None
    return {"model": _model(result.model), "thinkingLevel": result.thinking_level, "isScoped": result.is_scoped}


def stats_data(stats: SessionStats) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if stats.session_file is not None:
        data["sessionFile"] = stats.session_file
    tokens = stats.tokens
    data.update(
        sessionId=stats.session_id, userMessages=stats.user_messages, assistantMessages=stats.assistant_messages,
        toolCalls=stats.tool_calls, toolResults=stats.tool_results, totalMessages=stats.total_messages,
        tokens={"input": tokens.input, "output": tokens.output, "cacheRead": tokens.cache_read,
                "cacheWrite": tokens.cache_write, "total": tokens.total},
        cost=stats.cost,
    )
    usage = stats.context_usage
    if usage is not None:
        data["contextUsage"] = {"tokens": usage.tokens, "contextWindow": usage.context_window,
                                "percent": usage.percent}
    return data


def bash_data(outcome: BashOutcome) -> dict[str, Any]:
    data: dict[str, Any] = {"output": outcome.output}
    if outcome.exit_code is not None:
        data["exitCode"] = outcome.exit_code
    data.update(cancelled=outcome.cancelled, truncated=outcome.truncated)
    if outcome.full_output_path is not None:
        data["fullOutputPath"] = outcome.full_output_path
    return data


def command_data(info: CommandInfo) -> dict[str, Any]:
    data: dict[str, Any] = {"name": info.name}
    if info.description is not None:
        data["description"] = info.description
    data["source"] = info.source
    data["sourceInfo"] = dict(info.source_info)
    return data


# -- the commands --------------------------------------------------------------------------------

Handler: TypeAlias = Callable[["PiCommands", Any, Command], "Awaitable[Data] | Data"]
COMMANDS: dict[str, Handler] = {}


def _command(name: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        COMMANDS[name] = handler
        return handler

    return register


class PiCommands:
    """The commands of one process: each takes its host place at arrival and answers on ``out``."""

    def __init__(self, host: SerializedHost, out: LineOut, task_group: anyio.abc.TaskGroup, *,
                 cwd: str | None = None) -> None:
        self.host = host
        self.cwd = cwd if cwd is not None else os.getcwd()
        """The process's working directory, which Pi resolves a relative path against."""
        self.out = out
        self._task_group = task_group
        self._answering = 0
        self._quiet = anyio.Event()
        self._quiet.set()
        self._state: SessionState | None = None
        """The last state read: ``get_state`` answers it while a replacement runs (Pi answers at once)."""

    def handle(self, command: Any) -> None:
        """One command line, parsed (any JSON value): its call is made now, its answer written later."""
        is_object = isinstance(command, Mapping)
        command_id = _field(command, "id") if is_object else MISSING
        kind = _field(command, "type") if is_object else MISSING
        if isinstance(command_id, int) and not isinstance(command_id, bool) and abs(command_id) > 2**53:
            command_id = float(command_id)  # a JavaScript number
        handler = COMMANDS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            self.out.put(failure(command_id, kind, f"Unknown command: {js_string(kind)}"))
            return
        try:
            answer = handler(self, command_id, command)
        except Exception as error:
            self.out.put(failure(command_id, kind, message_of(error)))
            return
        if isinstance(answer, Awaitable):
            self._task_group.start_soon(self._answer, command_id, kind, answer, name=f"pi {kind}")
        elif answer is not _ANSWERED:
            self.out.put(success(command_id, kind, answer))

    async def _answer(self, command_id: Any, kind: Any, answer: Awaitable[Data]) -> None:
        self._answering += 1
        if self._quiet.is_set():
            self._quiet = anyio.Event()
        try:
            data = await answer
        except Exception as error:
            self.out.put(failure(command_id, kind, message_of(error)))
        else:
            if data is not _ANSWERED:
                self.out.put(success(command_id, kind, data))
        finally:
            self._answering -= 1
            if not self._answering:
                self._quiet.set()

    async def settled(self) -> None:
        """Until every command handled so far was answered."""
        await anyio.lowlevel.checkpoint()  # an answer task started just now takes its place first
        await self._quiet.wait()

    def call(self, name: str, act: Callable[[SessionPort], Any], *,
             stop: Callable[[SessionPort], Coroutine[Any, Any, None]] | None = None) -> Pending[Any]:
        """``act(session)`` through the door the method table gives rpcd's method ``name``."""
        return self.host.call(name, act, session_door(name), stop=stop)

    async def _settled(self, pending: Pending[Any], shape: Callable[[Any], Data] | None = None) -> Data:
        value = await pending
        return MISSING if shape is None else shape(value)

    def current_state(self) -> SessionState:
        """The current session's state; while a replacement runs (no usable session) the last one read."""
        try:
            state = self.host.state()
        except Exception:
            if self._state is None or self.host.status != "replacing":
                raise
            return self._state
        self._state = state
        return state


_ANSWERED: Final = object()
"""A handler's result meaning: the answer was written already (``prompt`` at its acceptance)."""


# prompting ---------------------------------------------------------------------------------------


@_command("prompt")
def _prompt(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    text = _field(command, "message")
    images = _images(_field(command, "images"))
    behavior = _field(command, "streamingBehavior")
    streaming = behavior if behavior in ("steer", "followUp") else None
    accepted = False

    def on_accepted() -> None:
        nonlocal accepted
        if not accepted:
            accepted = True
            front.out.put(success(command_id, "prompt"))

    def start(session: SessionPort) -> Awaitable[Any]:
        return session.prompt(_text(text, "startsWith", "text"), images=images, streaming_behavior=streaming,
                              on_accepted=on_accepted)

    pending = front.call(PROMPT, start)

    async def answer() -> Data:
        try:
            await pending
        except Exception as error:
            if accepted:  # the turn's own failure: its events said so (Pi writes no second answer)
                log.info("a prompt's turn failed after it was accepted", extra={"error": type(error).__name__})
                return _ANSWERED
            raise
        if not accepted:  # queued into the running turn, or a command that ran: accepted now
            on_accepted()
        return _ANSWERED

    return answer()


@_command("steer")
def _steer(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    text, images = _field(command, "message"), _images(_field(command, "images"))
    return front._settled(front.call(STEER, lambda s: s.steer(_text(text, "startsWith", "text"), images)))


@_command("follow_up")
def _follow_up(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    text, images = _field(command, "message"), _images(_field(command, "images"))
    return front._settled(front.call(FOLLOW_UP,
                                     lambda s: s.follow_up(_text(text, "startsWith", "text"), images)))


@_command("abort")
def _abort(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(ABORT, lambda s: s.abort()))


@_command("clear_queue")
def _clear_queue(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(CLEAR_QUEUE, lambda s: s.clear_queue()),
                          lambda q: {"steering": list(q.steering), "followUp": list(q.follow_up)})


# replacements -----------------------------------------------------------------------------------


async def _replaced(pending: Pending[ReplacementOutcome], shape: Callable[[ReplacementOutcome], Data]) -> Data:
    return shape(await pending)


@_command("new_session")
def _new_session(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    parent = _field(command, "parentSession")
    parent_session = parent if isinstance(parent, str) and js_truthy(parent) else None
    return _replaced(front.host.new_session(parent_session=parent_session), lambda o: {"cancelled": o.cancelled})


@_command("switch_session")
def _switch_session(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    path = _field(command, "sessionPath")
    if not isinstance(path, str):
        raise PiError(f'The "path" argument must be of type string. Received {js_string(path)}')
    # As Pi: a path that does not exist is a new session that will be written there.
    return _replaced(front.host.resume(path, must_exist=False), lambda o: {"cancelled": o.cancelled})


@_command("fork")
def _fork(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    entry_id = _field(command, "entryId")
    return _replaced(front.host.fork(js_string(entry_id)),
                     lambda o: {"text": o.selected_text if o.selected_text is not None else MISSING,
                                "cancelled": o.cancelled})


@_command("clone")
def _clone(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    host = front.host
    state = host.state()
    if state.leaf_id is None:
        raise PiError(NO_LEAF)
    return _replaced(host.clone(), lambda o: {"cancelled": o.cancelled})


# state --------------------------------------------------------------------------------------------


@_command("get_state")
def _get_state(front: PiCommands, command_id: Any, command: Command) -> Data:
    return state_data(front.current_state())


@_command("get_messages")
def _get_messages(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(GET_MESSAGES, lambda s: s.messages()),
                          lambda messages: {"messages": [dict(m) for m in messages]})


# model -----------------------------------------------------------------------------------------


@_command("set_model")
def _set_model(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    provider, model_id = _field(command, "provider"), _field(command, "modelId")

    def act(session: SessionPort) -> Any:
        if not isinstance(provider, str) or not isinstance(model_id, str):
            raise PiError(f"Model not found: {js_string(provider)}/{js_string(model_id)}")
        available = [m for m in session.available_models() if m.provider == provider and m.id == model_id]
        if not available:  # Pi picks among the models usable now
            raise PiError(f"Model not found: {provider}/{model_id}")
        session.set_model(provider, model_id)
        return session.state().pi_model

    return front._settled(front.call(SET_MODEL, act), lambda model: model)


@_command("cycle_model")
def _cycle_model(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(CYCLE_MODEL, lambda s: s.cycle_model("forward")), _cycled)


@_command("get_available_models")
def _get_available_models(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(GET_AVAILABLE_MODELS, lambda s: s.available_models()),
                          lambda models: {"models": [_model(m) for m in models]})


# thinking --------------------------------------------------------------------------------------


@_command("set_thinking_level")
def _set_thinking_level(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    level = _field(command, "level")
    return front._settled(front.call(SET_THINKING_LEVEL, lambda s: s.set_thinking_level(js_string(level))))


@_command("cycle_thinking_level")
def _cycle_thinking_level(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(CYCLE_THINKING_LEVEL, lambda s: s.cycle_thinking_level()),
                          lambda level: None if level is None else {"level": level})


@_command("get_available_thinking_levels")
def _get_available_thinking_levels(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(GET_AVAILABLE_THINKING_LEVELS, lambda s: s.available_thinking_levels()),
                          lambda levels: {"levels": list(levels)})


# queue modes ------------------------------------------------------------------------------------


@_command("set_steering_mode")
def _set_steering_mode(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    mode = _field(command, "mode")
    return front._settled(front.call(SET_STEERING_MODE, lambda s: s.set_steering_mode(mode)))


@_command("set_follow_up_mode")
def _set_follow_up_mode(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    mode = _field(command, "mode")
    return front._settled(front.call(SET_FOLLOW_UP_MODE, lambda s: s.set_follow_up_mode(mode)))


# compaction and retry ---------------------------------------------------------------------------


@_command("compact")
def _compact(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    custom = _field(command, "customInstructions")
    instructions = custom if isinstance(custom, str) else None
    return front._settled(front.call(COMPACT, lambda s: s.compact(instructions)), dict)


@_command("set_auto_compaction")
def _set_auto_compaction(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    enabled = js_truthy(_field(command, "enabled"))
    return front._settled(front.call(SET_AUTO_COMPACTION, lambda s: s.set_auto_compaction(enabled)))


@_command("set_auto_retry")
def _set_auto_retry(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    enabled = js_truthy(_field(command, "enabled"))
    return front._settled(front.call(SET_AUTO_RETRY, lambda s: s.set_auto_retry(enabled)))


@_command("abort_retry")
def _abort_retry(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(ABORT_RETRY, lambda s: s.abort_retry()))


# bash --------------------------------------------------------------------------------------------


@_command("bash")
def _bash(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    text = _field(command, "command")
    if not isinstance(text, str):
        raise PiError(f"bash needs a command string, not {js_string(text)}")
    exclude = _field(command, "excludeFromContext")
    request_id = command_id if isinstance(command_id, str | int) and not isinstance(command_id, bool) else None

    async def stop(session: SessionPort) -> None:
        session.abort_bash()

    pending = front.call(BASH, lambda s: s.bash(text, exclude_from_context=js_truthy(exclude)
                                                      if exclude is not MISSING else None, request_id=request_id),
                         stop=stop)
    return front._settled(pending, bash_data)


@_command("abort_bash")
def _abort_bash(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(ABORT_BASH, lambda s: s.abort_bash()))


# session -----------------------------------------------------------------------------------------


@_command("get_session_stats")
def _get_session_stats(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(GET_SESSION_STATS, lambda s: s.stats()), stats_data)


@_command("export_html")
def _export_html(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    output = _field(command, "outputPath")
    path = os.path.join(front.cwd, output) if isinstance(output, str) and output else None
    # Pi answers with the path as it was given (a relative one is its process's cwd's).
    return front._settled(front.call(EXPORT_HTML, lambda s: s.export_html(path)),
                          lambda written: {"path": output if path is not None else written})


@_command("get_fork_messages")
def _get_fork_messages(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(GET_FORK_MESSAGES, lambda s: s.fork_messages()),
                          lambda ms: {"messages": [{"entryId": m.entry_id, "text": m.text} for m in ms]})


@_command("get_entries")
def _get_entries(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    since = _field(command, "since")
    cursor = None if since is MISSING else js_string(since)

    def shape(value: tuple[list[dict[str, Any]], Any]) -> Data:
        entries, leaf_id = value
        return {"entries": [dict(e) for e in entries], "leafId": leaf_id}

    return front._settled(front.call(GET_ENTRIES, lambda s: s.entries(cursor)), shape)


@_command("get_tree")
def _get_tree(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(GET_TREE, lambda s: s.tree(True)),
                          lambda tree: {"tree": [dict(n) for n in tree.nodes or ()], "leafId": tree.leaf_id})


@_command("get_last_assistant_text")
def _get_last_assistant_text(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(GET_LAST_ASSISTANT_TEXT, lambda s: s.last_assistant_text()),
                          lambda text: {"text": text})


@_command("set_session_name")
def _set_session_name(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    name = js_trim(_text(_field(command, "name"), "trim", "command.name"))
    if not name:
        raise PiError(EMPTY_NAME)
    return front._settled(front.call(SET_SESSION_NAME, lambda s: s.set_session_name(name)))


@_command("get_commands")
def _get_commands(front: PiCommands, command_id: Any, command: Command) -> Awaitable[Data]:
    return front._settled(front.call(GET_COMMANDS, lambda s: s.commands()),
                          lambda commands: {"commands": [command_data(c) for c in commands]})


assert len(COMMANDS) == 33, sorted(COMMANDS)
