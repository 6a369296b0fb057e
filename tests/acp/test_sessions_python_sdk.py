"""``rpcd acp`` against the official Python SDK's client (``spawn_agent_process`` /
``ClientSideConnection``): the handshake, sessions side by side on one connection, cancel, load with
replay, list / close / delete, fork."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import text_block
from acp.exceptions import RequestError

from tests.acp.conftest import Project
from tests.acp.peer import Editor, plain, request, spawn

pytestmark = pytest.mark.anyio


def _steps(text: str, n: int = 1, **extra: object) -> list[dict[str, object]]:
    return [{"text": text, **extra} for _ in range(n)]


async def test_initialize_is_required_first_and_answers_what_rpcd_can_do(agent_dir: Path, project: Project) -> None:
    cwd = project("p")
    editor = Editor()
    async with spawn(editor, agent_dir, initialize=False, env={"OPENAI_API_KEY": "sk-test-not-used"}) as (conn, _):
        with pytest.raises(RequestError) as early:
            await conn.new_session(cwd=str(cwd), mcp_servers=[])
        assert early.value.code == -32010
        assert early.value.data["errors"][0]["type"] == "NotInitialized"

        init = await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities)
        assert init.protocol_version == 1
        caps = init.agent_capabilities
        assert caps is not None and caps.load_session is True
        assert caps.prompt_capabilities is not None
        assert (caps.prompt_capabilities.image, caps.prompt_capabilities.audio,
                caps.prompt_capabilities.embedded_context) == (True, False, True)  # images: the faux model takes them
        assert caps.mcp_capabilities is not None and caps.mcp_capabilities.http and caps.mcp_capabilities.sse
        sessions = caps.session_capabilities
        assert sessions is not None
        assert all(getattr(sessions, name) is not None for name in ("list", "resume", "close", "delete", "fork"))
        assert init.agent_info is not None and init.agent_info.name == "rpcd"
        methods = {m.id: m for m in init.auth_methods or []}
        assert "openai" not in methods  # its key is set
        assert "ANTHROPIC_API_KEY" in (methods["anthropic"].description or "")
        anthropic = plain(methods["anthropic"])  # env_var: the client asks for the key and starts rpcd with it
        assert anthropic["type"] == "env_var"
        assert anthropic["vars"][0] == {"name": "ANTHROPIC_API_KEY", "label": "Anthropic (ANTHROPIC_API_KEY)",
                                        "secret": True, "optional": False}
        assert all(v["optional"] for v in anthropic["vars"][1:])

        assert await conn.authenticate(method_id="openai") is not None
        with pytest.raises(RequestError) as missing:
            await conn.authenticate(method_id="anthropic")
        assert missing.value.code == -32000
        assert "ANTHROPIC_API_KEY" in missing.value.data["errors"][0]["message"]

        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert relative.value.code == -32602
        assert relative.value.data["errors"][0]["path"] == "$.cwd"


async def test_two_sessions_prompt_at_once_and_never_see_each_others_events(agent_dir: Path,
                                                                         project: Project) -> None:
    slow = {"chunkSize": 4, "chunkDelay": 0.01}
    alpha = project("alpha", [{"text": "alpha " * 40, **slow}])
    beta = project("beta", [{"text": "beta " * 40, **slow}])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        a = await conn.new_session(cwd=str(alpha), mcp_servers=[])
        b = await conn.new_session(cwd=str(beta), mcp_servers=[])
        assert a.session_id != b.session_id
        answers = await asyncio.gather(
            conn.prompt(session_id=a.session_id, prompt=[text_block("go alpha")]),
            conn.prompt(session_id=b.session_id, prompt=[text_block("go beta")]),
        )
        assert [r.stop_reason for r in answers] == ["end_turn", "end_turn"]
        assert editor.text_of(a.session_id) == "alpha " * 40
        assert editor.text_of(b.session_id) == "beta " * 40
        order = [sid for sid, u in editor.updates if u["sessionUpdate"] == "agent_message_chunk"]
        first_b, last_a = order.index(b.session_id), len(order) - 1 - order[::-1].index(a.session_id)
        assert first_b < last_a, "the two turns ran one after the other, not side by side"
        for sid in (a.session_id, b.session_id):
            assert editor.of(sid, "usage_update")
            assert editor.of(sid, "session_info_update")[0]["title"].startswith("go ")


async def test_cancel_stops_a_streaming_turn_and_a_running_command(agent_dir: Path, project: Project,
                                                                  tmp_path: Path) -> None:
    marker = tmp_path / "finished"
    cwd = project("p", [
        {"text": "word " * 2000, "chunkSize": 5, "chunkDelay": 0.01},
        {"toolCall": {"name": "bash", "arguments": {"command": f"sleep 60; touch {marker}"}}},
        {"text": "after the command"},
    ])
    editor = Editor()
    async with spawn(editor, agent_dir, "--approval", "auto") as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("talk")]))
        await editor.wait_for(lambda: editor.of(session, "agent_message_chunk"))
        await conn.cancel(session_id=session)
        assert (await turn).stop_reason == "cancelled"
        assert len(editor.text_of(session)) < len("word " * 2000)

        turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("run it")]))
        await editor.wait_for(lambda: editor.of(session, "tool_call_update"))  # the command started
        await conn.cancel(session_id=session)
        assert (await turn).stop_reason == "cancelled"
        (start,) = editor.of(session, "tool_call")
        assert (start["kind"], start["status"]) == ("execute", "pending")
        end = editor.tool_updates(session, start["toolCallId"])[-1]
        assert end["status"] == "failed"
        assert "Command aborted" in end["content"][-1]["content"]["text"]
        assert not marker.exists()

        after = await conn.prompt(session_id=session, prompt=[text_block("still there?")])
        assert after.stop_reason == "end_turn"


async def test_usage_after_a_cancel_keeps_the_context_size(agent_dir: Path, project: Project) -> None:
    """Issue 30.8: the aborted reply's usage (zeros) made ``usage_update.used`` drop to 0; rpcd's usage
    rule (``rpcd.runtime.usage.valid_usage``) skips aborted and failed replies."""
    cwd = project("p", [{"text": "a first answer"}, {"text": "word " * 2000, "chunkSize": 5, "chunkDelay": 0.01},
                        {"text": "after the cancel"}])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=session, prompt=[text_block("hi")])).stop_reason == "end_turn"
        (first,) = editor.of(session, "usage_update")
        assert first["used"] > 0
        turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("talk")]))
        await editor.wait_for(lambda: len(editor.of(session, "agent_message_chunk")) > 1)
        await conn.cancel(session_id=session)
        assert (await turn).stop_reason == "cancelled"
        assert editor.of(session, "usage_update") == [first]  # the aborted reply says nothing of the context
        assert (await conn.prompt(session_id=session, prompt=[text_block("again")])).stop_reason == "end_turn"
        assert editor.of(session, "usage_update")[-1]["used"] > first["used"]


async def test_load_replays_the_conversation_before_answering_and_reuses_a_live_host(agent_dir: Path,
                                                                                   project: Project) -> None:
    cwd = project("p", [
        {"thinking": "Let me look.", "toolCall": {"name": "read", "arguments": {"path": "notes.txt"}}},
        {"text": "The notes say hello."},
    ])
    (cwd / "notes.txt").write_text("hello\n")
    first = Editor()
    async with spawn(first, agent_dir) as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=session, prompt=[text_block("What do the notes say?")])).stop_reason \
            == "end_turn"
        live = len(first.updates)
        await conn.load_session(cwd=str(cwd), session_id=session, mcp_servers=[])  # live: same host, replayed
        replayed_live = first.updates[live:]

    second = Editor()
    async with spawn(second, agent_dir) as (conn, _):
        loaded = await conn.load_session(cwd=str(cwd), session_id=session, mcp_servers=[])
        # the session's commands (at least rpcd's /reload) are announced beside the replay
        replayed = [u for _, u in second.updates if u["sessionUpdate"] != "available_commands_update"]
        kinds = [u["sessionUpdate"] for u in replayed]
        assert kinds == ["user_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
                         "agent_message_chunk"]
        assert replayed[0]["content"]["text"] == "What do the notes say?"
        assert replayed[2]["kind"] == "read" and replayed[2]["locations"][0]["path"] == str(cwd / "notes.txt")
        assert replayed[3]["status"] == "completed" and replayed[3]["content"][0]["content"]["text"] == "hello\n"
        assert replayed[4]["content"]["text"] == "The notes say hello."
        assert loaded.modes is not None and loaded.modes.current_mode_id == "ask-writes"
        assert [u for _, u in replayed_live if u["sessionUpdate"] != "available_commands_update"] == replayed

        again = await conn.prompt(session_id=session, prompt=[text_block("And now?")])
        assert again.stop_reason == "end_turn"  # this process's model runs its script from the start
        assert second.of(session, "tool_call")[-1]["status"] == "pending"

        with pytest.raises(RequestError) as unknown:
            await conn.load_session(cwd=str(cwd), session_id="0000-nope", mcp_servers=[])
        assert unknown.value.code == -32002
    files = list((agent_dir / "sessions").rglob("*.jsonl"))
    assert len(files) == 1
    roles = [json.loads(line).get("message", {}).get("role") for line in files[0].read_text().splitlines()]
    assert roles.count("user") == 2


async def test_list_close_delete_and_fork(agent_dir: Path, project: Project) -> None:
    cwd = project("p", _steps("answer", 10))
    other = project("q", _steps("other answer", 2))
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        one = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        two = (await conn.new_session(cwd=str(other), mcp_servers=[])).session_id
        unsaved = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await conn.prompt(session_id=one, prompt=[text_block("first question")])
        await conn.prompt(session_id=two, prompt=[text_block("second question")])

        listed = await conn.list_sessions()
        titles = {s.session_id: s.title for s in listed.sessions}
        assert titles[one] == "first question" and titles[two] == "second question"
        assert unsaved in titles  # live, not written yet (no reply so far)
        only_cwd = await conn.list_sessions(cwd=str(other))
        assert [s.session_id for s in only_cwd.sessions] == [two]

        forked = await conn.fork_session(session_id=one, cwd=str(cwd), mcp_servers=[])
        assert forked.session_id not in (one, two)
        await conn.prompt(session_id=forked.session_id, prompt=[text_block("in the fork")])
        before = len(editor.updates)
        await conn.load_session(cwd=str(cwd), session_id=forked.session_id, mcp_servers=[])
        history = [u["content"]["text"] for sid, u in editor.updates[before:] if u["sessionUpdate"] ==
                   "user_message_chunk"]
        assert history == ["first question", "in the fork"]  # the source's conversation, then the fork's own
        await conn.close_session(session_id=forked.session_id)

        await conn.close_session(session_id=two)
        with pytest.raises(RequestError) as closed:
            await conn.prompt(session_id=two, prompt=[text_block("hello?")])
        assert closed.value.code == -32002
        with pytest.raises(RequestError):
            await conn.close_session(session_id=two)

        await request(conn, "session/delete", {"sessionId": two})
        remaining = {s.session_id for s in (await conn.list_sessions()).sessions}
        assert two not in remaining and one in remaining and forked.session_id in remaining
        with pytest.raises(RequestError) as gone:
            await request(conn, "session/delete", {"sessionId": two})
        assert gone.value.code == -32002

        await request(conn, "session/delete", {"sessionId": one})  # a live session: closed, then deleted
        assert one not in {s.session_id for s in (await conn.list_sessions()).sessions}
    files = sorted(str(p) for p in (agent_dir / "sessions").rglob("*.jsonl"))
    assert len(files) == 1 and forked.session_id in files[0]
    assert _header(files[0])["parentSession"].endswith(f"_{one}.jsonl")


def _header(path: str) -> dict[str, object]:
    header: dict[str, object] = json.loads(Path(path).read_text().splitlines()[0])
    return header


async def test_templates_and_skills_are_offered_as_commands_and_run_from_a_prompt(agent_dir: Path,
                                                                               project: Project) -> None:
    prompts = agent_dir / "prompts"
    prompts.mkdir()
    (prompts / "greet.md").write_text("---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $1.\n")
    cwd = project("p")
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await editor.wait_for(lambda: editor.of(session, "available_commands_update"))
        (update,) = editor.of(session, "available_commands_update")
        greet = next(c for c in update["availableCommands"] if c["name"] == "greet")
        assert update["availableCommands"][0]["name"] == "reload"  # the reload method, as Pi's /reload
        assert greet == {"name": "greet", "description": "Greet someone", "input": {"hint": "<name>"}}
        answer = await conn.prompt(session_id=session, prompt=[text_block("/greet Ada")])
        assert answer.stop_reason == "end_turn"
        assert editor.text_of(session) == "echo: Say hello to Ada."
