"""What the summarizer reads: Pi 0.85.0's ``serializeConversation`` and the file lists
(``compaction/utils.ts``).

Messages are first brought to the LLM shape (``convert_to_llm``: ``bashExecution``, custom and
summary messages become user messages), then written as labelled text so the summarizing
model does not continue the conversation::

    [User]: ...
    [Assistant thinking]: ...
    [Assistant]: ...
    [Assistant tool calls]: read(path="a.py"); bash(command="ls")
    [Tool result]: ...   (cut after 2000 characters, with a marker)

File operations come from the ``read`` / ``write`` / ``edit`` tool calls' ``path`` argument
(the built-in tools of ``rpcd.tools``) and from the previous summary's ``details``; a file
both read and modified is listed as modified only. Lists are sorted as JavaScript sorts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

from rpcd.core.jstext import content_text, js_entries, js_length, js_slice, js_truthy, json_text, utf16_key
from rpcd.providers.transform import convert_to_llm
from rpcd.tools import edit as edit_tool
from rpcd.tools import read as read_tool
from rpcd.tools import write as write_tool

TOOL_RESULT_MAX_CHARS: Final = 2000

@attrs.define
class FileOps:
    """Pi's ``FileOperations``: paths read, written and edited (insertion-ordered sets).

    Only string paths are collected: ``details`` lists come from files, and a non-string
    there (a hand edit) is not a path."""

    read: dict[str, None] = attrs.field(factory=dict)
    written: dict[str, None] = attrs.field(factory=dict)
    edited: dict[str, None] = attrs.field(factory=dict)

    def add_details(self, details: Any) -> None:
        """A previous summary's ``details``: ``readFiles`` read, ``modifiedFiles`` edited."""
        if not isinstance(details, Mapping):
            return
        read_files, modified_files = details.get("readFiles"), details.get("modifiedFiles")
        if isinstance(read_files, list):
            self.read.update(dict.fromkeys(f for f in read_files if isinstance(f, str)))
        if isinstance(modified_files, list):
            self.edited.update(dict.fromkeys(f for f in modified_files if isinstance(f, str)))

    def merge(self, other: FileOps) -> None:
        """``other``'s paths after these (a ``Set``: a path already here keeps its place)."""
        self.read.update(other.read)
        self.written.update(other.written)
        self.edited.update(other.edited)

    def to_pi(self) -> dict[str, list[str]]:
        return {"read": list(self.read), "written": list(self.written), "edited": list(self.edited)}


_OPS: Final = {read_tool.NAME: "read", write_tool.NAME: "written", edit_tool.NAME: "edited"}


def extract_file_ops_from_message(message: Mapping[str, Any], ops: FileOps) -> None:
    """Pi's ``extractFileOpsFromMessage``: the ``path`` of read/write/edit tool calls."""
    if message.get("role") != "assistant":
        return
    content = message.get("content")
    if type(content) is not list:
        return
    for block in content:
        if type(block) is not dict and not isinstance(block, Mapping):
            continue
        if block.get("type") != "toolCall" or "arguments" not in block or "name" not in block:
            continue
        args = block["arguments"]
        # JavaScript: ``if (!args) continue`` (an object is truthy), then ``typeof args.path === "string"``
        if type(args) is not dict and not (isinstance(args, Mapping) and js_truthy(args)):
            continue
        path = args.get("path")
        if type(path) is not str or not path:
            continue
        name = block["name"]
        target = _OPS.get(name) if type(name) is str else None
        if target == "read":
            ops.read[path] = None
        elif target == "written":
            ops.written[path] = None
        elif target == "edited":
            ops.edited[path] = None


def compute_file_lists(ops: FileOps) -> tuple[list[str], list[str]]:
    """``(readFiles, modifiedFiles)``: files only read, and files edited or written; sorted."""
    modified = {**ops.edited, **ops.written}
    read_only = sorted((f for f in ops.read if f not in modified), key=utf16_key)
    return read_only, sorted(modified, key=utf16_key)


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """The ``<read-files>`` / ``<modified-files>`` blocks appended to a summary."""
    sections: list[str] = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    """Pi's ``truncateForSummary``: the first ``max_chars`` UTF-16 units and a marker."""
    pieces: list[str] = []
    _put_truncated(pieces.append, text, max_chars)
    return "".join(pieces)


def llm_messages(messages: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """``convertToLlm`` as the summarizer reads it: user, assistant and tool-result messages as they
    are (Pi passes them through), the others through ``convert_to_llm``."""
    for message in messages:
        if message.get("role") in ("user", "assistant", "toolResult"):
            yield message
        else:
            yield from convert_to_llm([message])


def serialize_conversation(messages: Iterable[Mapping[str, Any]]) -> str:
    """Pi's ``serializeConversation`` of LLM messages (``llm_messages`` first).

    Pieces are collected and joined once (a long session gives tens of megabytes of text: no
    piece is copied twice on the way)."""
    pieces: list[str] = []
    put = pieces.append
    for message in messages:
        role = message.get("role")
        if role == "user":
            text = content_text(message.get("content"), "")
            if text:
                put("\n\n[User]: ")
                put(text)
        elif role == "assistant":
            content = message.get("content")
            thinking: list[str] = []
            calls: list[str] = []
            has_text = False
            for block in content if type(content) is list else ():
                if type(block) is not dict and not isinstance(block, Mapping):
                    continue
                kind = block.get("type")
                if kind == "text":
                    has_text = True
                elif kind == "thinking":
                    value = block.get("thinking")
                    thinking.append(value if type(value) is str else "")
                elif kind == "toolCall":
                    calls.append(_tool_call_text(block))
            if thinking:
                put("\n\n[Assistant thinking]: ")
                put(thinking[0] if len(thinking) == 1 else "\n".join(thinking))
            if has_text:
                put("\n\n[Assistant]: ")
                put(content_text(content))
            if calls:
                put("\n\n[Assistant tool calls]: ")
                put("; ".join(calls))
        elif role == "toolResult":
            text = content_text(message.get("content"), "")
            if text:
                put("\n\n[Tool result]: ")
                _put_truncated(put, text)
    if not pieces:
        return ""
    pieces[0] = pieces[0][2:]  # no separator before the first part
    return "".join(pieces)


def _put_truncated(put: Callable[[str], None], text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> None:
    """``truncate_for_summary`` as pieces."""
    if 2 * len(text) <= max_chars:
        put(text)
        return
    length = js_length(text)
    if length <= max_chars:
        put(text)
        return
    put(text[:max_chars] if length == len(text) else js_slice(text, max_chars))
    put(f"\n\n[... {length - max_chars} more characters truncated]")


def _tool_call_text(block: Mapping[str, Any]) -> str:
    args = block.get("arguments")
    pairs = ", ".join([f"{key}={json_text(value)}" for key, value in js_entries(args)]) \
        if isinstance(args, Mapping) else ""
    name = block.get("name")
    return f"{name if isinstance(name, str) else json_text(name)}({pairs})"
