"""A session's events (Pi's shapes) as ACP ``session/update`` variants, live and in replay.

Live (:class:`EventTranslator`, one per ACP session):

* ``message_update`` text / thinking deltas → ``agent_message_chunk`` / ``agent_thought_chunk``;
  the user's own prompt is not echoed (the client sent it);
* ``tool_execution_start`` → ``tool_call`` (``pending``): ACP ``ToolKind``, title and locations from
  the approval facts (``rpcd.tools.approval_facts``: one owner), the arguments as ``rawInput``
  (long strings cut), and for ``edit`` one diff per replacement, for ``write`` the file's current
  text against the new one (read just before the call is announced: from the editor when the client
  serves files, else from disk);
* ``tool_execution_update`` → ``tool_call_update`` (``in_progress``) with the output so far (bash);
* ``tool_execution_end`` → ``tool_call_update`` (``completed`` / ``failed``) with the result's text
  and images, the diffs again for a successful edit/write (with the first changed line as location);
* ``message_end`` of an assistant → ``usage_update`` (tokens in context, the model's window, the
  session's cumulative cost);
* ``session_info_changed`` → ``session_info_update`` (title);
* ``commands_changed`` → ``available_commands_update`` (templates, skills, extension commands);
* a to-do list in a tool call's arguments, a tool result's ``details`` or an extension's custom
  entry → ``plan`` (``rpcd.acp.plans``), when it changed.

Replay (:func:`replay`): the context messages of a loaded session as the same variants —
``user_message_chunk`` for the user's text and images, agent chunks, and each tool call as a
finished ``tool_call`` with its result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ContentToolCallContent,
    Cost,
    FileEditToolCallContent,
    ImageContentBlock,
    PlanEntry,
    SessionInfoUpdate,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UnstructuredCommandInput,
    Usage,
    UsageUpdate,
    UserMessageChunk,
)

from rpcd.acp.plans import PlanTracker, plan_in
from rpcd.core import codec
from rpcd.core.values import ToolLocation
from rpcd.runtime.usage import calculate_context_tokens, valid_usage
from rpcd.tools import BUILTIN_TOOL_NAMES, builtin_profile, extension_profile
from rpcd.tools.approval_facts import CallFacts, describe_call, preview_arguments

__all__ = ["Deferred", "EventTranslator", "Update", "commands_update", "replay", "tool_call_facts"]

Update = Any
"""One ``session/update`` variant of the SDK (``AgentMessageChunk``, ``ToolCallStart``, …)."""
LIMITS_META: Final = "rpcd/limits"
"""The ``_meta`` key of ``usage_update`` that carries the spending caps (``getState.limits``'s shape)."""
Deferred = Callable[[], Awaitable[Update | None]]
"""An update that needs I/O first (a file's current text); the stream awaits it in its place."""
ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
OldText = Callable[[str], Awaitable[str | None]]
"""``old_text(path)``: the file's current text (``None``: it does not exist or cannot be read)."""

RAW_INPUT_CHARS: Final = 2000
TITLE_CHARS: Final = 200


def tool_call_facts(name: str, args: Mapping[str, Any], cwd: str) -> CallFacts:
    """The call as the approval gate describes it (a built-in by its name, anything else as ``other``)."""
    profile = builtin_profile(name) if name in BUILTIN_TOOL_NAMES else extension_profile()
    return describe_call(name, args, cwd=cwd, profile=profile)


def _locations(locations: Iterable[ToolLocation]) -> list[ToolCallLocation]:
    return [ToolCallLocation(path=loc.path, line=loc.line if loc.line is None or loc.line >= 0 else None)
            for loc in locations]


def _raw(value: Any) -> Any:
    """A value as plain JSON the wire can carry (non-finite numbers as ``null``), strings cut."""
    try:
        return codec.to_json(preview_arguments(value, RAW_INPUT_CHARS))
    except (TypeError, ValueError):
        return None


def _text_block(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _content_blocks(content: Any) -> list[TextContentBlock | ImageContentBlock]:
    """Pi content (a string, or ``text``/``image`` blocks) as ACP content blocks."""
    if isinstance(content, str):
        return [_text_block(content)] if content else []
    out: list[TextContentBlock | ImageContentBlock] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"]:
            out.append(_text_block(block["text"]))
        elif block.get("type") == "image" and isinstance(block.get("data"), str):
            out.append(ImageContentBlock(type="image", data=block["data"],
                                         mime_type=str(block.get("mimeType") or "image/png")))
    return out


def _tool_content(result: Any) -> list[ToolContent]:
    content = result.get("content") if isinstance(result, Mapping) else None
    return [ContentToolCallContent(type="content", content=block) for block in _content_blocks(content)]


def _edit_diffs(path: str | None, args: Mapping[str, Any]) -> list[FileEditToolCallContent]:
    """One diff per replacement of an ``edit`` call (what the model asked to change)."""
    edits = args.get("edits")
    if path is None or not isinstance(edits, list):
        return []
    return [FileEditToolCallContent(type="diff", path=path, old_text=edit["oldText"], new_text=edit["newText"])
            for edit in edits
            if isinstance(edit, Mapping) and isinstance(edit.get("oldText"), str)
            and isinstance(edit.get("newText"), str)]


class _Call:
    __slots__ = ("diffs", "facts", "name", "terminal")

    def __init__(self, name: str, facts: CallFacts) -> None:
        self.name = name
        self.facts = facts
        self.diffs: list[FileEditToolCallContent] = []
        self.terminal: str | None = None


class EventTranslator:
    """One ACP session's live events → updates (pushes them through ``emit``)."""

    def __init__(self, cwd: str, emit: Callable[[Update | Deferred], None], *, old_text: OldText,
                 context_window: Callable[[], int | None],
                 limits: Callable[[], dict[str, Any] | None] = lambda: None) -> None:
        self.cwd = cwd
        self._emit = emit
        self._old_text = old_text
        self._context_window = context_window
        self._limits = limits
        """The session's spending caps as ``getState.limits`` shows them (``None``: no cap): every
        ``usage_update`` carries them in ``_meta["rpcd/limits"]``."""
        self._calls: dict[str, _Call] = {}
        self.cost = 0.0
        """Cumulative cost of the session's assistant messages (``usage.cost.total``)."""
        self._plans = PlanTracker()
        self._turn_tokens: dict[str, int] = dict.fromkeys(_TURN_TOKENS, 0)
        self._turn_replies = 0
        self.last_assistant: Mapping[str, Any] | None = None
        """The last assistant message that ended (its ``stopReason`` / ``errorMessage`` decide a turn's answer)."""

    # -- the session's listener ---------------------------------------------------------------------

    def on_event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_update":
            self._delta(event.get("assistantMessageEvent"))
        elif kind == "tool_execution_start":
            self._start(event)
            self._plan(plan_in(event.get("args")))  # a todo-style tool's list (TodoWrite, update_plan, …)
        elif kind == "tool_execution_update":
            self._progress(event)
        elif kind == "tool_execution_end":
            self._end(event)
            result = event.get("result")
            self._plan(plan_in(result.get("details")) if isinstance(result, Mapping) else None)
        elif kind == "entry_appended":
            entry = event.get("entry")
            if isinstance(entry, Mapping) and entry.get("type") == "custom":
                self._plan(plan_in(entry.get("data")))  # an extension's appendEntry (Pi's plan-mode)
        elif kind == "message_end":
            message = event.get("message")
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                self.last_assistant = message
                self._usage(message)
        elif kind == "limit_reached":
            self._limit(event)
        elif kind == "commands_changed":
            commands = event.get("commands")
            self._emit(commands_update(commands if isinstance(commands, list) else []))
        elif kind == "session_info_changed":
            name = event.get("name")
            self._emit(SessionInfoUpdate(session_update="session_info_update",
                                         title=name if isinstance(name, str) else None))

    def attach_terminal(self, tool_call_id: str, terminal_id: str) -> None:
        """The editor runs this call's command in its terminal ``terminal_id``: show it there."""
        call = self._calls.get(tool_call_id)
        if call is not None:
            call.terminal = terminal_id
        self._emit(ToolCallProgress(session_update="tool_call_update", tool_call_id=tool_call_id,
                                    status="in_progress",
                                    content=[TerminalToolCallContent(type="terminal", terminal_id=terminal_id)]))

    def add_cost(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """Count the cost of a loaded session's history."""
        for message in messages:
            if message.get("role") == "assistant":
                self.cost += _cost_of(message)

    # -- events ------------------------------------------------------------------------------------

    def _delta(self, update: Any) -> None:
        if not isinstance(update, Mapping):
            return
        delta = update.get("delta")
        if not isinstance(delta, str) or not delta:
            return
        if update.get("type") == "text_delta":
            self._emit(AgentMessageChunk(session_update="agent_message_chunk", content=_text_block(delta)))
        elif update.get("type") == "thinking_delta":
            self._emit(AgentThoughtChunk(session_update="agent_thought_chunk", content=_text_block(delta)))

    def _start(self, event: Mapping[str, Any]) -> None:
        call_id = str(event.get("toolCallId", ""))
        name = str(event.get("toolName", ""))
        raw_args = event.get("args")
        args: Mapping[str, Any] = raw_args if isinstance(raw_args, Mapping) else {}
        facts = tool_call_facts(name, args, self.cwd)
        call = self._calls[call_id] = _Call(name, facts)
        start = ToolCallStart(session_update="tool_call", tool_call_id=call_id, title=facts.title[:TITLE_CHARS],
                              kind=facts.kind, status="pending", locations=_locations(facts.locations),
                              raw_input=_raw(dict(args)))
        if name == "edit":
            call.diffs = _edit_diffs(facts.path, args)
            start.content = list(call.diffs)
        elif name == "write" and facts.path is not None and isinstance(args.get("content"), str):
            path, new_text = facts.path, args["content"]

            async def with_old_text() -> Update:
                old = await self._old_text(path)
                call.diffs = [FileEditToolCallContent(type="diff", path=path, old_text=old, new_text=new_text)]
                start.content = list(call.diffs)
                return start

            self._emit(with_old_text)
            return
        self._emit(start)

    def _progress(self, event: Mapping[str, Any]) -> None:
        call = self._calls.get(str(event.get("toolCallId", "")))
        if call is None or call.terminal is not None or call.diffs:
            return  # the terminal shows its own output; a file change shows its diff
        content = _tool_content(event.get("partialResult"))
        self._emit(ToolCallProgress(session_update="tool_call_update", tool_call_id=str(event["toolCallId"]),
                                    status="in_progress", content=content or None))

    def _end(self, event: Mapping[str, Any]) -> None:
        call_id = str(event.get("toolCallId", ""))
        call = self._calls.pop(call_id, None)
        failed = event.get("isError") is True
        result = event.get("result")
        content: list[Any] = []
        locations: list[ToolCallLocation] | None = None
        if call is not None and call.terminal is not None:
            content.append(TerminalToolCallContent(type="terminal", terminal_id=call.terminal))
            if failed:
                content.extend(_tool_content(result))
        elif call is not None and call.diffs and not failed:
            content.extend(call.diffs)
            details = result.get("details") if isinstance(result, Mapping) else None
            line = details.get("firstChangedLine") if isinstance(details, Mapping) else None
            if isinstance(line, int) and call.facts.path is not None:
                locations = [ToolCallLocation(path=call.facts.path, line=line if line >= 0 else None)]
        else:
            content.extend(_tool_content(result))
        self._emit(ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                                    status="failed" if failed else "completed", content=content,
                                    locations=locations))

    def begin_turn(self) -> None:
        """A ``session/prompt`` starts: its usage is counted from zero."""
        self._turn_tokens = dict.fromkeys(_TURN_TOKENS, 0)
        self._turn_replies = 0

    def turn_usage(self) -> Usage | None:
        """The tokens of the turn's assistant replies, summed (``PromptResponse.usage``); ``None``
        when no reply ended (a refused or withdrawn prompt, a command that ran instead)."""
        if not self._turn_replies:
            return None
        tokens = self._turn_tokens
        return Usage(total_tokens=tokens["totalTokens"], input_tokens=tokens["input"], output_tokens=tokens["output"],
                     cached_read_tokens=tokens["cacheRead"], cached_write_tokens=tokens["cacheWrite"])

    def _plan(self, entries: list[PlanEntry] | None) -> None:
        update = self._plans.update(entries)
        if update is not None:
            self._emit(update)

    def _usage(self, message: Mapping[str, Any]) -> None:
        self.cost += _cost_of(message)
        raw = message.get("usage")
        if isinstance(raw, Mapping):
            self._turn_replies += 1
            for key in _TURN_TOKENS:
                value = raw.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    self._turn_tokens[key] += value
        usage = valid_usage(message)  # an aborted or failed reply's zeros are no context size
        size = self._context_window()
        if size is None or usage is None:
            return
        limits = self._limits()
        used = calculate_context_tokens(usage)
        self._emit(UsageUpdate(session_update="usage_update", used=used, size=size,
                               cost=Cost(amount=self.cost, currency="USD"),
                               field_meta={LIMITS_META: limits} if limits is not None else None))

    def _limit(self, event: Mapping[str, Any]) -> None:
        """A spending cap stopped the turn before a model call: the user reads why (the prompt's
        answer is ``max_turn_requests`` with ``_meta["rpcd/stopReason"]: "limit"``)."""
        name, used, cap = event.get("limit"), event.get("used"), event.get("max")
        money = name in ("maxCost", "maxCostPerDay")
        shown = (f"{used:.4f} of {cap:.4f} USD" if money else f"{used} of {cap} tokens") \
            if isinstance(used, int | float) and isinstance(cap, int | float) else ""
        text = f"\n\n[Stopped before the next model call: the spending cap {name} is reached ({shown}).]"
        self._emit(AgentMessageChunk(session_update="agent_message_chunk", content=_text_block(text),
                                     field_meta={"rpcd/limitReached": dict(event)}))


RELOAD_COMMAND: Final = "/reload"
"""The prompt that is the ``reload`` method in ACP (Pi's ``/reload``): it runs instead of a turn."""


def commands_update(commands: Sequence[Mapping[str, Any]]) -> AvailableCommandsUpdate:
    """The session's commands (``getCommands``' wire form) as ACP's: what follows ``/`` in a prompt,
    after ``reload`` (rpcd's ``reload`` method; it wins over an extension command of that name)."""
    available = [AvailableCommand(name=RELOAD_COMMAND[1:], description="Reload settings, extensions, skills, "
                                  "prompt templates and context files")]
    for command in commands:
        name = command.get("name")
        if not isinstance(name, str) or not name or name == RELOAD_COMMAND[1:]:
            continue
        description = command.get("description")
        hint = command.get("argumentHint")
        available.append(AvailableCommand(
            name=name,
            description=description if isinstance(description, str) and description
            else f"{command.get('source', 'command')} command",
            input=AvailableCommandInput(UnstructuredCommandInput(hint=hint)) if isinstance(hint, str) and hint
            else None,
        ))
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=available)


_TURN_TOKENS: Final = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
"""Pi's ``usage`` token fields summed into a turn's ``PromptResponse.usage``."""


def _cost_of(message: Mapping[str, Any]) -> float:
    usage = message.get("usage")
    cost = usage.get("cost") if isinstance(usage, Mapping) else None
    total = cost.get("total") if isinstance(cost, Mapping) else None
    return float(total) if isinstance(total, int | float) and not isinstance(total, bool) and total >= 0 else 0.0


# -- replay ----------------------------------------------------------------------------------------


def replay(messages: Sequence[Mapping[str, Any]], cwd: str) -> list[Update]:
    """The conversation of ``messages`` (the session's context) as updates, in order; then the last
    to-do list its tool calls held (``rpcd.acp.plans``) as the ``plan``."""
    out: list[Update] = []
    calls: dict[str, CallFacts] = {}
    plan: list[PlanEntry] | None = None
    for message in messages:
        role = message.get("role")
        held = [block.get("arguments") for block in message.get("content") or ()
                if isinstance(block, Mapping) and block.get("type") == "toolCall"] if role == "assistant" \
            else [message.get("details")] if role == "toolResult" else []
        for value in held:
            if (found := plan_in(value)) is not None:
                plan = found  # (an empty list: the plan was cleared)
        if role == "user":
            out.extend(UserMessageChunk(session_update="user_message_chunk", content=block)
                       for block in _content_blocks(message.get("content")))
        elif role == "assistant":
            out.extend(_replay_assistant(message, cwd, calls))
        elif role == "toolResult":
            call_id = str(message.get("toolCallId", ""))
            facts = calls.pop(call_id, None)
            content: list[Any] = []
            if facts is not None and facts.tool_name in ("edit", "write") and message.get("isError") is not True:
                content.extend(_replayed_diffs(facts))
            else:
                content.extend(_tool_content(message))
            out.append(ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                                        status="failed" if message.get("isError") is True else "completed",
                                        content=content))
        elif role == "bashExecution":
            out.extend(_replay_bash(message, len(out)))
    if plan:
        out.append(AgentPlanUpdate(session_update="plan", entries=plan))
    return out


def _replay_assistant(message: Mapping[str, Any], cwd: str, calls: dict[str, CallFacts]) -> list[Update]:
    out: list[Update] = []
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
            out.append(AgentMessageChunk(session_update="agent_message_chunk", content=_text_block(block["text"])))
        elif kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
            out.append(AgentThoughtChunk(session_update="agent_thought_chunk",
                                         content=_text_block(block["thinking"])))
        elif kind == "toolCall":
            call_id = str(block.get("id", ""))
            name = str(block.get("name", ""))
            raw_args = block.get("arguments")
            args: Mapping[str, Any] = raw_args if isinstance(raw_args, Mapping) else {}
            facts = tool_call_facts(name, args, cwd)
            calls[call_id] = _with_arguments(facts, args)
            out.append(ToolCallStart(session_update="tool_call", tool_call_id=call_id,
                                     title=facts.title[:TITLE_CHARS], kind=facts.kind, status="pending",
                                     locations=_locations(facts.locations), raw_input=_raw(dict(args))))
    return out


def _with_arguments(facts: CallFacts, args: Mapping[str, Any]) -> CallFacts:
    """The facts with the call's full arguments (diffs need the whole texts, not the previews)."""
    return attrs.evolve(facts, arguments=dict(args))


def _replayed_diffs(facts: CallFacts) -> list[FileEditToolCallContent]:
    if facts.path is None:
        return []
    if facts.tool_name == "edit":
        return _edit_diffs(facts.path, facts.arguments)
    content = facts.arguments.get("content")
    if isinstance(content, str):
        return [FileEditToolCallContent(type="diff", path=facts.path, old_text=None, new_text=content)]
    return []


def _replay_bash(message: Mapping[str, Any], index: int) -> list[Update]:
    """A ``!command`` the user ran (Pi's ``bashExecution``) as a finished ``execute`` call."""
    command = message.get("command")
    output = message.get("output")
    if not isinstance(command, str):
        return []
    call_id = f"bash-{message.get('timestamp', index)}"
    code = message.get("exitCode")
    failed = isinstance(code, int) and code != 0
    text = output if isinstance(output, str) else ""
    return [
        ToolCallStart(session_update="tool_call", tool_call_id=call_id, title=f"bash: {command}"[:TITLE_CHARS],
                      kind="execute", status="failed" if failed else "completed",
                      content=[ContentToolCallContent(type="content", content=_text_block(text))] if text else [],
                      raw_input={"command": command}),
    ]

