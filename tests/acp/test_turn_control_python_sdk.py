"""Turn control through ``rpcd acp`` with the official Python SDK's client: image content blocks into
the session (and its file, and back out in ``session/load``'s replay), refused images named by their
block with nothing recorded, and the ``thought_level`` config option over the host's thinking level."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from acp import image_block, text_block
from acp.exceptions import RequestError

from tests.acp.conftest import Project
from tests.acp.peer import Editor, plain, spawn

pytestmark = pytest.mark.anyio

IMAGES = Path(__file__).resolve().parents[1] / "fixtures" / "images"
PNG = base64.b64encode((IMAGES / "python.png").read_bytes()).decode()
JPEG = base64.b64encode((IMAGES / "python.jpg").read_bytes()).decode()
REASONING_LEVELS = ["off", "minimal", "low", "medium", "high"]
"""Pi's levels for a model with ``reasoning: true`` and no ``thinkingLevelMap``."""


def _models(agent_dir: Path, **models: dict[str, Any]) -> None:
    """``models.json`` with one local provider per entry (its key set, its server never called)."""
    (agent_dir / "models.json").write_text(json.dumps({"providers": {
        name: {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "test-key",
               "models": [model]} for name, model in models.items()}}))


def _session_file(agent_dir: Path) -> Path:
    (path,) = (agent_dir / "sessions").rglob("*.jsonl")
    return path


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _option(options: Any, option_id: str) -> dict[str, Any]:
    """One config option by id, from an answer's (SDK models) or an update's (plain) options."""
    found: dict[str, Any] = next(o for o in (x if isinstance(x, dict) else plain(x) for x in options)
                                 if o["id"] == option_id)
    return found


def _values(option: dict[str, Any]) -> list[str]:
    return [choice["value"] for choice in option["options"]]


async def test_image_blocks_reach_the_session_file_and_replay_as_image_blocks(agent_dir: Path,
                                                                             project: Project) -> None:
    cwd = project("p", [{"text": "a python"}, {"text": "two images"}])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        init = await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities)
        assert init.agent_capabilities is not None and init.agent_capabilities.prompt_capabilities is not None
        assert init.agent_capabilities.prompt_capabilities.image is True  # the faux model takes images
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=session, prompt=[text_block("what is this?"),
                                                               image_block(PNG, "image/png")])
        assert answer.stop_reason == "end_turn"
        assert editor.text_of(session) == "a python"
        assert editor.of(session, "session_info_update")[0]["title"] == "what is this?"
        answer = await conn.prompt(session_id=session, prompt=[image_block(JPEG, "image/jpeg"),
                                                               image_block(PNG, "image/png")])
        assert answer.stop_reason == "end_turn"
    users = [e["message"] for e in _entries(_session_file(agent_dir))
             if e.get("type") == "message" and e["message"]["role"] == "user"]
    assert [u["content"] for u in users] == [
        [{"type": "text", "text": "what is this?"}, {"type": "image", "data": PNG, "mimeType": "image/png"}],
        [{"type": "text", "text": ""}, {"type": "image", "data": JPEG, "mimeType": "image/jpeg"},
         {"type": "image", "data": PNG, "mimeType": "image/png"}],
    ]

    second = Editor()
    async with spawn(second, agent_dir) as (conn, _):
        await conn.load_session(cwd=str(cwd), session_id=session, mcp_servers=[])
        chunks = [u["content"] for u in second.of(session, "user_message_chunk")]
    assert chunks == [{"type": "text", "text": "what is this?"},
                      {"type": "image", "data": PNG, "mimeType": "image/png"},
                      {"type": "image", "data": JPEG, "mimeType": "image/jpeg"},
                      {"type": "image", "data": PNG, "mimeType": "image/png"}]


@pytest.mark.parametrize(
    ("block", "path", "says"),
    [
        (image_block("not base64!", "image/png"), "$.prompt[1].data", "prompt[1].data is not valid base64"),
        (image_block(base64.b64encode(b"plain text").decode(), "image/png"), "$.prompt[1].data",
         "prompt[1] is not a PNG, JPEG, GIF or WebP image"),
        (image_block(JPEG, "image/png"), "$.prompt[1].mimeType", "prompt[1].mimeType is 'image/png' but the data is "
                                                                 "image/jpeg"),
    ],
)
async def test_a_bad_image_is_refused_naming_its_block_and_nothing_is_recorded(
    agent_dir: Path, project: Project, block: Any, path: str, says: str
) -> None:
    cwd = project("p", [{"text": "first reply"}, {"text": "still serving"}])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=session, prompt=[text_block("look"), block])
        assert refused.value.code == -32602
        data = refused.value.data
        assert data["operation"] == "session/prompt" and data["terminal"] is False
        (error,) = data["errors"]
        assert (error["type"], error["path"], error["message"]) == ("InvalidParams", path, says)
        assert editor.of(session, "session_info_update") == []  # not titled by a prompt never recorded
        assert not (agent_dir / "sessions").exists() or not list((agent_dir / "sessions").rglob("*.jsonl"))

        answer = await conn.prompt(session_id=session, prompt=[text_block("plain words")])
        assert answer.stop_reason == "end_turn" and editor.text_of(session) == "first reply"
        assert [u["title"] for u in editor.of(session, "session_info_update")] == ["plain words"]
        file = _session_file(agent_dir)
        before = file.read_text()
        with pytest.raises(RequestError):
            await conn.prompt(session_id=session, prompt=[text_block("again"), block])
        assert file.read_text() == before
    users = [e["message"]["content"] for e in _entries(file) if e.get("message", {}).get("role") == "user"]
    assert users == [[{"type": "text", "text": "plain words"}]]


async def test_an_image_for_a_model_without_image_input_is_refused_with_its_name(agent_dir: Path,
                                                                                project: Project) -> None:
    _models(agent_dir, textonly={"id": "t", "input": ["text"]})
    cwd = project("p", [{"text": "unused"}])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await conn.set_config_option(config_id="model", session_id=session, value="textonly/t")
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=session, prompt=[text_block("what is this?"), image_block(PNG, "image/png")])
        assert refused.value.code == -32043
        (error,) = refused.value.data["errors"]
        assert error["type"] == "InputNotSupported" and "textonly/t does not take images" in error["message"]
        assert editor.of(session, "agent_message_chunk") == []
    assert not (agent_dir / "sessions").exists() or not list((agent_dir / "sessions").rglob("*.jsonl"))


async def test_thought_level_follows_the_model_and_sets_the_sessions_thinking_level(agent_dir: Path,
                                                                                   project: Project) -> None:
    _models(agent_dir, local={"id": "r", "reasoning": True}, plain={"id": "p"})
    cwd = project("p", [{"text": "thought about it"}])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        created = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        session = created.session_id
        assert [plain(o)["id"] for o in created.config_options or []] == ["mode", "model", "thought_level", "sandbox",
                                                                         "sandbox_network"]
        model = _option(created.config_options, "model")
        assert {"local/r", "plain/p"} <= set(_values(model))

        answer = await conn.set_config_option(config_id="model", session_id=session, value="local/r")
        level = _option(answer.config_options, "thought_level")
        assert _values(level) == REASONING_LEVELS and level["category"] == "thought_level"
        updates = len(editor.of(session, "config_option_update"))

        answer = await conn.set_config_option(config_id="thought_level", session_id=session, value="high")
        assert _option(answer.config_options, "thought_level")["currentValue"] == "high"
        (update,) = editor.of(session, "config_option_update")[updates:]
        assert _option(update["configOptions"], "thought_level")["currentValue"] == "high"

        again = len(editor.of(session, "config_option_update"))
        await conn.set_config_option(config_id="thought_level", session_id=session, value="high")
        assert len(editor.of(session, "config_option_update")) == again  # nothing changed: nothing said

        with pytest.raises(RequestError) as unknown:
            await conn.set_config_option(config_id="thought_level", session_id=session, value="xhigh")
        assert unknown.value.code == -32602
        (error,) = unknown.value.data["errors"]
        assert error["path"] == "$.value" and "local/r" in error["message"] and "off, minimal" in error["message"]

        await conn.set_config_option(config_id="model", session_id=session, value="plain/p")
        (switched,) = editor.of(session, "config_option_update")[again:]  # one update: the model and its levels
        level = _option(switched["configOptions"], "thought_level")
        assert (_values(level), level["currentValue"]) == (["off"], "off")
        assert "does not reason" in level["description"]
        assert _option(switched["configOptions"], "model")["currentValue"] == "plain/p"

        await conn.set_config_option(config_id="model", session_id=session, value="faux/faux-1")  # the script's
        assert (await conn.prompt(session_id=session, prompt=[text_block("think")])).stop_reason == "end_turn"

    changes = [(e["type"], e.get("thinkingLevel") or e.get("modelId")) for e in _entries(_session_file(agent_dir))
               if e["type"] in ("model_change", "thinking_level_change")]
    assert changes[-5:] == [("model_change", "r"), ("thinking_level_change", "high"), ("model_change", "p"),
                            ("thinking_level_change", "off"), ("model_change", "faux-1")]

    second = Editor()
    async with spawn(second, agent_dir) as (conn, _):
        loaded = await conn.load_session(cwd=str(cwd), session_id=session, mcp_servers=[])
        level = _option(loaded.config_options, "thought_level")
        assert (_values(level), level["currentValue"]) == (["off"], "off")
        resumed = await conn.resume_session(cwd=str(cwd), session_id=session, mcp_servers=[])
        assert _option(resumed.config_options, "thought_level") == level
        answer = await conn.set_config_option(config_id="model", session_id=session, value="local/r")
        assert _values(_option(answer.config_options, "thought_level")) == REASONING_LEVELS


async def test_a_chosen_model_and_thinking_level_hold_for_the_processs_later_sessions(agent_dir: Path,
                                                                                     project: Project) -> None:
    """As Pi's persisted default (issue 30.2): a session created after the choice starts on it; the
    agent dir's settings.json is left as it was."""
    _models(agent_dir, local={"id": "r", "reasoning": True}, plain={"id": "p"})
    settings = (agent_dir / "settings.json").read_bytes()
    cwd = project("p")
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        first = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await conn.set_config_option(config_id="model", session_id=first, value="local/r")
        await conn.set_config_option(config_id="thought_level", session_id=first, value="high")
        later = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        assert _option(later.config_options, "model")["currentValue"] == "local/r"
        assert _option(later.config_options, "thought_level")["currentValue"] == "high"
    assert (agent_dir / "settings.json").read_bytes() == settings
