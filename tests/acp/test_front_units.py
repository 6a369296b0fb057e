"""The ACP front's pure parts: content blocks to a prompt, events and history to updates, the ordered
bounded update stream (a hypothesis property), the session store lookups."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp.exceptions import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
    ToolCallProgress,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from rpcd.acp.errors import to_request_error
from rpcd.acp.library import list_page
from rpcd.acp.prompt import at_blocks, build_prompt
from rpcd.acp.stream import COALESCE_AT, UpdateStream
from rpcd.acp.updates import EventTranslator, replay
from rpcd.core.errors import InputNotSupportedError, InvalidArgumentError
from rpcd.core.values import ImageInput
from rpcd.sessions.library import SessionLibrary, SessionLocation
from rpcd.store import SessionManager

pytestmark = pytest.mark.anyio


def _plain(update: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


# -- prompts --------------------------------------------------------------------------------------------


def test_prompt_blocks_become_one_prompt_with_mentions_and_context() -> None:
    prompt = build_prompt([
        TextContentBlock(type="text", text="Compare "),
        ResourceContentBlock(type="resource_link", name="a.py", uri="file:///w/a.py"),
        TextContentBlock(type="text", text=" with "),
        EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
            uri="file:///w/b.py", text="print('b')", mime_type="text/x-python")),
        EmbeddedResourceContentBlock(type="resource", resource=BlobResourceContents(
            uri="file:///w/logo.png", blob="AAAA", mime_type="image/png")),
    ])
    assert prompt.text == (
        "Compare [@a.py](file:///w/a.py) with [@b.py](file:///w/b.py)[@logo.png](file:///w/logo.png)\n\n"
        '<context ref="file:///w/b.py">\nprint(\'b\')\n</context>\n\n'
        '<context ref="file:///w/logo.png">(binary image/png content, not included)</context>'
    )


def test_image_blocks_become_the_prompts_images_in_order_and_audio_is_refused_by_block() -> None:
    prompt = build_prompt([ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
                           TextContentBlock(type="text", text="compare"),
                           ImageContentBlock(type="image", data="BBBB", mime_type="image/jpeg",
                                             uri="file:///w/b.jpg")])
    assert prompt.text == "compare"
    assert prompt.images == (ImageInput(data="AAAA", mime_type="image/png"),
                             ImageInput(data="BBBB", mime_type="image/jpeg"))
    assert prompt.image_blocks == (0, 2)
    with pytest.raises(RequestError) as refused:
        build_prompt([TextContentBlock(type="text", text="listen"),
                      AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav"),
                      AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")])
    assert refused.value.code == -32602
    assert [e["path"] for e in refused.value.data["errors"]] == ["$.prompt[1]", "$.prompt[2]"]


def test_a_refused_image_is_named_by_its_content_block() -> None:
    prompt = build_prompt([TextContentBlock(type="text", text="look"),
                           ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
                           TextContentBlock(type="text", text=" and "),
                           ImageContentBlock(type="image", data="!!", mime_type="image/png")])
    refusal = InvalidArgumentError("images[1].data is not valid base64", param="images[1].data",
                                   session_path="/s.jsonl")
    error = at_blocks(to_request_error(refusal, "session/prompt"), prompt)
    assert (error.code, str(error)) == (-32602, "prompt[3].data is not valid base64")
    assert error.data["operation"] == "session/prompt"
    assert error.data["errors"] == [{"type": "InvalidParams", "message": "prompt[3].data is not valid base64",
                                     "path": "$.prompt[3].data"}]
    other = to_request_error(InvalidArgumentError("images[7] is odd", param="images[7]"), "session/prompt")
    assert at_blocks(other, prompt).data["errors"][0]["path"] == "$.images[7]"  # not one of the prompt's images
    unsupported = to_request_error(InputNotSupportedError("local/t does not take images"), "session/prompt")
    assert at_blocks(unsupported, prompt).data == unsupported.data


# -- events and history ------------------------------------------------------------------------------


async def test_tool_calls_show_kind_locations_diffs_and_results(tmp_path: Path) -> None:
    sent: list[Any] = []
    target = tmp_path / "w.txt"

    async def old_text(path: str) -> str | None:
        return "before\n" if path == str(target) else None

    translator = EventTranslator(str(tmp_path), sent.append, old_text=old_text, context_window=lambda: 1000)
    edit_args = {"path": "e.txt", "edits": [{"oldText": "a", "newText": "b"}, {"oldText": "c", "newText": "d"}]}
    for event in [
        {"type": "message_update", "assistantMessageEvent": {"type": "thinking_delta", "delta": "hm"}},
        {"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": "ok"}},
        {"type": "message_update", "assistantMessageEvent": {"type": "toolcall_delta", "delta": "{"}},
        {"type": "tool_execution_start", "toolCallId": "e1", "toolName": "edit", "args": edit_args},
        {"type": "tool_execution_end", "toolCallId": "e1", "toolName": "edit", "isError": False,
         "result": {"content": [{"type": "text", "text": "Successfully replaced 2 block(s) in e.txt."}],
                    "details": {"diff": "...", "firstChangedLine": 3}}},
        {"type": "tool_execution_start", "toolCallId": "w1", "toolName": "write",
         "args": {"path": "w.txt", "content": "after\n"}},
        {"type": "tool_execution_start", "toolCallId": "b1", "toolName": "bash", "args": {"command": "rm -f x"}},
        {"type": "tool_execution_update", "toolCallId": "b1", "partialResult": {"content": []}},
        {"type": "tool_execution_update", "toolCallId": "b1",
         "partialResult": {"content": [{"type": "text", "text": "partial"}]}},
        {"type": "tool_execution_end", "toolCallId": "b1", "toolName": "bash", "isError": True,
         "result": {"content": [{"type": "text", "text": "partial\n\nCommand exited with code 1"}]}},
        {"type": "message_end", "message": {"role": "assistant", "usage": {
            "input": 10, "output": 5, "cacheRead": 1, "cacheWrite": 0, "totalTokens": 16,
            "cost": {"total": 0.25}}}},
        {"type": "session_info_changed", "name": "Named"},
    ]:
        translator.on_event(event)
    resolved = [await item() if callable(item) else item for item in sent]
    updates = [_plain(u) for u in resolved]
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds == ["agent_thought_chunk", "agent_message_chunk", "tool_call", "tool_call_update", "tool_call",
                     "tool_call", "tool_call_update", "tool_call_update", "tool_call_update", "usage_update",
                     "session_info_update"]
    edit_start, edit_end, write_start, bash_start = updates[2], updates[3], updates[4], updates[5]
    path = str(tmp_path / "e.txt")
    assert (edit_start["kind"], edit_start["title"], edit_start["status"]) == ("edit", "edit e.txt", "pending")
    assert edit_start["content"] == [{"type": "diff", "path": path, "oldText": "a", "newText": "b"},
                                     {"type": "diff", "path": path, "oldText": "c", "newText": "d"}]
    assert edit_end["status"] == "completed" and edit_end["locations"] == [{"path": path, "line": 3}]
    assert write_start["content"] == [{"type": "diff", "path": str(target), "oldText": "before\n",
                                       "newText": "after\n"}]
    assert (bash_start["kind"], bash_start["title"]) == ("delete", "bash: rm -f x")
    assert "content" not in updates[6]  # the first, empty snapshot only says "running"
    assert updates[7]["content"] == [{"type": "content", "content": {"type": "text", "text": "partial"}}]
    assert updates[8]["status"] == "failed"
    assert updates[9] == {"sessionUpdate": "usage_update", "used": 16, "size": 1000,
                          "cost": {"amount": 0.25, "currency": "USD"}}
    assert updates[10]["title"] == "Named"


def test_a_session_replays_as_the_client_saw_it_live() -> None:
    manager = SessionManager.in_memory("/w")
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AA",
                                                                      "mimeType": "image/png"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Let me write."},
            {"type": "toolCall", "id": "t1", "name": "write", "arguments": {"path": "a.txt", "content": "x" * 5000}}]},
        {"role": "toolResult", "toolCallId": "t1", "toolName": "write", "isError": False,
         "content": [{"type": "text", "text": "Successfully wrote to a.txt"}]},
        {"role": "bashExecution", "command": "ls", "output": "a.txt\n", "exitCode": 0, "timestamp": 7},
    ]
    del manager
    updates = [_plain(u) for u in replay(messages, "/w")]
    assert [u["sessionUpdate"] for u in updates] == ["user_message_chunk", "user_message_chunk",
                                                     "agent_thought_chunk", "agent_message_chunk", "tool_call",
                                                     "tool_call_update", "tool_call"]
    assert updates[1]["content"]["type"] == "image"
    assert updates[4]["rawInput"]["content"].endswith("… [3000 more characters]")  # previews stay small
    assert updates[5]["content"] == [{"type": "diff", "path": "/w/a.txt", "newText": "x" * 5000}]
    assert updates[6]["toolCallId"] == "bash-7" and updates[6]["status"] == "completed"


# -- the update stream ---------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["message", "thought", "tool", "drain"]), st.text(max_size=3)),
                max_size=200))
def test_the_stream_keeps_order_and_every_character_whatever_it_merges(script: list[tuple[str, str]]) -> None:
    async def main() -> None:
        sent: list[Any] = []
        gate = anyio.Event()

        async def send(session_id: str, update: Any) -> None:
            await gate.wait()  # a slow client: the queue grows and text chunks merge
            sent.append(update)

        stream = UpdateStream("s", send)
        expected: list[tuple[str, str]] = []
        async with anyio.create_task_group() as group:
            group.start_soon(stream.run)
            for kind, text in script:
                if kind == "drain":
                    gate.set()
                    await stream.drain()
                    gate = anyio.Event()
                    continue
                if kind == "tool":
                    stream.push(ToolCallProgress(session_update="tool_call_update", tool_call_id=text or "x"))
                else:
                    cls = AgentMessageChunk if kind == "message" else AgentThoughtChunk
                    stream.push(cls(session_update=f"agent_{kind}_chunk",
                                    content=TextContentBlock(type="text", text=text)))
                expected.append((kind, (text or "x") if kind == "tool" else text))
            gate.set()
            stream.close()
        assert stream.sent == len(sent)
        got = [("tool", u.tool_call_id) if isinstance(u, ToolCallProgress) else
               ("message" if isinstance(u, AgentMessageChunk) else "thought", u.content.text) for u in sent]
        assert _runs(got) == _runs(expected)
        assert len(sent) <= len(expected)

    anyio.run(main)


def _runs(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Consecutive text of one kind joined (what merging may do); tool updates kept apart."""
    out: list[tuple[str, str]] = []
    for kind, text in items:
        if out and kind != "tool" and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


async def test_the_stream_merges_only_under_backlog() -> None:
    gate = anyio.Event()
    sent: list[Any] = []

    async def send(session_id: str, update: Any) -> None:
        await gate.wait()
        sent.append(update)

    stream = UpdateStream("s", send)
    async with anyio.create_task_group() as group:
        group.start_soon(stream.run)
        for i in range(COALESCE_AT * 3):
            stream.push(AgentMessageChunk(session_update="agent_message_chunk",
                                          content=TextContentBlock(type="text", text=str(i % 10))))
        gate.set()
        await stream.drain()
        stream.close()
    assert COALESCE_AT <= len(sent) <= COALESCE_AT + 2
    assert "".join(u.content.text for u in sent) == "".join(str(i % 10) for i in range(COALESCE_AT * 3))


# -- the session store ----------------------------------------------------------------------------------


def _session(agent_dir: Path, cwd: Path, text: str) -> SessionManager:
    manager = SessionManager.create(str(cwd), agent_dir=str(agent_dir))
    manager.append_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2,
                            "stopReason": "stop"})
    return manager


def test_sessions_are_found_by_id_listed_by_page_and_deleted_only_in_the_store(tmp_path: Path) -> None:
    agent_dir, cwd = tmp_path / "agent", tmp_path / "w"
    cwd.mkdir()
    managers = [_session(agent_dir, cwd, f"question {i}") for i in range(105)]
    renamed = Path(str(managers[0].get_session_file()))
    imported = renamed.with_name("imported-copy.jsonl")
    renamed.rename(imported)
    library = SessionLibrary(str(agent_dir), SessionLocation(None, "default"))  # the one both fronts use
    assert library.find(managers[0].get_session_id(), str(cwd)) == str(imported)
    assert library.find(managers[1].get_session_id()) == managers[1].get_session_file()
    assert library.find("../../etc") is None

    first, cursor = list_page(library, str(cwd), None)
    second, end = list_page(library, str(cwd), cursor)
    assert len(first) == 100 and len(second) == 5 and end is None
    assert {s.session_id for s in first + second} == {m.get_session_id() for m in managers}
    with pytest.raises(ValueError):
        list_page(library, None, "not-a-cursor")

    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(json.dumps({"type": "session", "version": 3, "id": "x", "timestamp": "t", "cwd": "/"}) + "\n")
    with pytest.raises(InvalidArgumentError):  # not a file of the session store: deleteSession's refusal
        library.delete(str(outside))
    assert outside.exists()
    library.delete(str(imported))  # to the user's trash
    assert not imported.exists()
