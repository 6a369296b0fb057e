"""What the person deciding about a tool call is shown, through both fronts: the JSON-RPC daemon's
``tool/authorize`` and ACP's ``session/request_permission`` — the rule an "always" answer would
store, the whole command however long (with a plain notice of what its title leaves out), and the
target a symbolic link resolves to."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.acp.peer import Editor, spawn
from tests.driver import Daemon

LONG = "ls " + "a" * 2100 + " ; touch PWNED"
CALLS = [
    {"name": "bash", "arguments": {"command": "ls -la"}, "id": "plain"},
    {"name": "bash", "arguments": {"command": "python3 -c 'print(1)'"}, "id": "python"},
    {"name": "bash", "arguments": {"command": "git -c alias.z='!touch PWNED' z"}, "id": "git"},
    {"name": "bash", "arguments": {"command": LONG}, "id": "long"},
    {"name": "write", "arguments": {"path": "link.txt", "content": "x"}, "id": "link"},
]


def _project(tmp_path: Path) -> tuple[Path, Path, Path]:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"fauxScript": "replies.json"}))
    project = tmp_path / "project"
    project.mkdir()
    (project / "replies.json").write_text(json.dumps([{"toolCalls": CALLS}, {"text": "done"}]))
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "target.txt"
    target.write_text("keep\n")
    (project / "link.txt").symlink_to(target)
    return agent, project, target


def _questions_over_rpc(agent: Path, project: Path) -> list[dict[str, Any]]:
    asked: list[Mapping[str, Any]] = []

    def answer(params: Mapping[str, Any]) -> dict[str, str]:
        asked.append(params)
        return {"decision": "rejectOnce"}

    with Daemon("--agent-dir", str(agent), "--cwd", str(project), handlers={"tool/authorize": answer}) as daemon:
        daemon.initialize({"toolApproval": {}})
        daemon.call("prompt", {"text": "go"})
    return [{"id": p["toolCallId"], "title": p["title"], "command": p["arguments"].get("command"),
             "locations": [loc["path"] for loc in p["locations"]], "always": p["alwaysRule"]["description"],
             "alwaysCommand": p["alwaysRule"].get("command"), "notices": p["notices"]} for p in asked]


def _questions_over_acp(agent: Path, project: Path) -> list[dict[str, Any]]:
    editor = Editor()
    editor.default_answer = "reject_once"

    async def run() -> None:
        async with spawn(editor, agent) as (conn, _):
            from acp import text_block

            session = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("go")])

    anyio.run(run)
    out = []
    for asked in editor.permissions:
        call = asked["toolCall"]
        options = {o["kind"]: o["name"] for o in asked["options"]}
        assert options["reject_always"].removeprefix("Always reject: ") == (
            options["allow_always"].removeprefix("Always allow: "))
        content = call.get("content") or []
        out.append({"id": call["toolCallId"], "title": call["title"], "command": call["rawInput"].get("command"),
                    "locations": [loc["path"] for loc in call.get("locations") or []],
                    "always": options["allow_always"].removeprefix("Always allow: "),
                    "notices": content[0]["content"]["text"].split("\n") if content else []})
    return out


@pytest.mark.parametrize("front", ["rpc", "acp"])
def test_the_request_names_the_rule_carries_the_whole_command_and_resolves_links(front: str,
                                                                                 tmp_path: Path) -> None:
    agent, project, target = _project(tmp_path)
    asked = {q["id"]: q for q in (_questions_over_rpc if front == "rpc" else _questions_over_acp)(agent, project)}
    assert list(asked) == [call["id"] for call in CALLS]
    assert asked["plain"]["always"] == "bash commands `ls *` (one simple command each)"
    assert asked["python"]["always"] == "exactly this bash command"
    assert asked["git"]["always"] == "exactly this bash command"
    # the whole command, and a plain word about what its title leaves out
    long = asked["long"]
    assert long["command"] == LONG and long["title"].endswith(" …") and "PWNED" not in long["title"]
    (notice,) = long["notices"]
    assert f"{len(LONG):,} characters" in notice and "holds ;" in notice
    # the link's target, not the link
    link = asked["link"]
    assert link["locations"] == [str(target.resolve())]
    assert link["title"] == f"write link.txt → {target.resolve()}"
    if front == "rpc":
        assert asked["plain"]["alwaysCommand"] == "ls *"
        assert asked["git"]["alwaysCommand"] == "git -c alias.z='!touch PWNED' z"
        assert link["notices"] == [f"link.txt resolves through a symbolic link: the call acts on {target.resolve()}"]
        assert asked["plain"]["notices"] == []
    assert target.read_text() == "keep\n" and not (project / "PWNED").exists()
