"""Resuming and continuing a hand-edited or corrupt file, against real ``pi --mode rpc`` (issue 30.4).

The same bytes are resumed by Pi (``switch_session``) and by rpcd (``resume``) and then continued by
a prompt. Both must leave every existing byte where it was (appending only), append the same entries
(Pi's ``thinking_level_change`` when the branch has none — a corrupt line Pi drops does not count),
and report the same leaf: Pi's ``getLeafId()``, a number when the file's last entry has a numeric
id, the first appended entry when the last entry has no id. ``tests/pi_compat/test_hand_edited_files``
compares how the two *read* such files; this compares what a session does with them.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon
from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_program import PiRpc

T = "2026-01-15T11:00:01.000Z"
USAGE = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _user(entry_id: Any, parent: Any, text: str) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": T,
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1768474801000}}


def _assistant(entry_id: Any, parent: Any, text: str) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": T,
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "faux",
                        "provider": "faux", "model": "faux-1", "usage": USAGE, "stopReason": "stop",
                        "timestamp": 1768474802000}}


def _thinking(entry_id: str, parent: Any, level: str = "high") -> dict[str, Any]:
    return {"type": "thinking_level_change", "id": entry_id, "parentId": parent, "timestamp": T,
            "thinkingLevel": level}


BASE = [_user("u1", None, "first"), _assistant("a1", "u1", "answer")]
NO_ID = {"type": "message", "parentId": "a1", "timestamp": T,
         "message": {"role": "user", "content": [{"type": "text", "text": "no id"}], "timestamp": 1768474803000}}
CORRUPT_THINKING = ('{"type":"thinking_level_change","id":"t1","parentId":"a0","timestamp":"' + T
                    + '","thinkingLevel":"hi\\qgh"}')  # ends in "}" like a whole line; \q is no JSON escape
CASES: dict[str, list[Any]] = {
    "the last entry has no id": [*BASE, NO_ID],
    "the last entry has no id, the branch has a thinking entry": [_thinking("t0", None), *BASE[:1],
                                                                  _assistant("a1", "u1", "answer"), NO_ID],
    "the last entry has a numeric id": [_thinking("t0", None), _user("u1", "t0", "first"),
                                        _assistant("a1", "u1", "answer"), _user(12345, "a1", "numbered")],
    "a complete-looking corrupt thinking entry on the branch": [
        _user("u0", None, "zero"), _assistant("a0", "u0", "zero answer"), CORRUPT_THINKING,
        _user("u1", "t1", "first"), _assistant("a1", "u1", "answer")],
}


def _write(path: Path, cwd: Path, lines: list[Any]) -> bytes:
    header = {"type": "session", "version": 3, "id": "hand-edited", "timestamp": T, "cwd": str(cwd)}
    rows = [json.dumps(header, separators=(",", ":"))]
    rows += [line if isinstance(line, str) else json.dumps(line, separators=(",", ":")) for line in lines]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path.read_bytes()


def _appended(path: Path, before: bytes) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert data.startswith(before), "the file's existing bytes were rewritten"
    return [json.loads(line) for line in data[len(before):].decode().splitlines() if line.strip()]


def _normalised(appended: list[dict[str, Any]], leaves: list[Any]) -> dict[str, Any]:
    """Appended entries with their fresh ids replaced by their position; the leaves likewise."""
    names = {e["id"]: f"#{i}" for i, e in enumerate(appended)}
    entries = []
    for entry in appended:
        message = entry.get("message") or {}
        entries.append((entry["type"], names.get(entry.get("parentId"), entry.get("parentId")),
                        entry.get("thinkingLevel"), message.get("role"),
                        [b.get("text") for b in message.get("content", [])]))
    return {"entries": entries, "leaves": [names.get(leaf, leaf) for leaf in leaves]}


def _pi_side(oracle: PiOracle, root: Path, lines: list[Any]) -> dict[str, Any]:
    agent, cwd = root / "agent", root / "project"
    agent.mkdir(parents=True)
    cwd.mkdir()
    path = root / "hand.jsonl"
    before = _write(path, cwd, lines)
    (root / "script.json").write_text("[]")
    pi = PiRpc(oracle, agent_dir=agent, cwd=cwd, env={"RPCD_FAUX_SCRIPT": str(root / "script.json")})
    try:
        assert pi.response(pi.send({"type": "switch_session", "sessionPath": str(path)}))["success"]
        leaves = [pi.response(pi.send({"type": "get_entries"}))["data"].get("leafId")]
        resumed = _appended(path, before)
        assert pi.response(pi.send({"type": "prompt", "message": "continue"}))["success"]
        deadline = time.monotonic() + 60
        while pi.response(pi.send({"type": "get_state"}))["data"]["isStreaming"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        leaves.append(pi.response(pi.send({"type": "get_entries"}))["data"].get("leafId"))
    finally:
        pi.close()
    return {"resumed": len(resumed), **_normalised(_appended(path, before), leaves)}


def _rpcd_side(root: Path, lines: list[Any]) -> dict[str, Any]:
    agent, cwd = root / "agent", root / "project"
    agent.mkdir(parents=True)
    cwd.mkdir()
    path = root / "hand.jsonl"
    before = _write(path, cwd, lines)
    with Daemon("--agent-dir", str(agent), "--cwd", str(cwd), "--provider", "faux", "--model", "faux-1") as d:
        d.initialize()
        d.call("resume", {"sessionPath": str(path)})
        leaves = [d.call("getEntries")["leafId"]]
        assert d.call("getState")["leafId"] == leaves[0]
        assert d.call("getTree")["leafId"] == leaves[0]
        resumed = _appended(path, before)
        assert d.call("prompt", {"text": "continue"}) == {"stopReason": "stop"}
        leaves.append(d.call("getEntries")["leafId"])
    return {"resumed": len(resumed), **_normalised(_appended(path, before), leaves)}


@pytest.mark.parametrize("name", list(CASES))
def test_resuming_and_continuing_a_hand_edited_file_does_what_pi_does(pi_oracle: PiOracle, tmp_path: Path,
                                                                      name: str) -> None:
    with ThreadPoolExecutor(max_workers=1) as pool:
        theirs = pool.submit(_pi_side, pi_oracle, tmp_path / "pi", CASES[name])
        ours = _rpcd_side(tmp_path / "rpcd", CASES[name])
        pi = theirs.result()
    assert ours == pi
    kinds = [e[0] for e in pi["entries"]]
    assert kinds[-2:] == ["message", "message"]  # the prompt and its answer
    if name == "the last entry has a numeric id":
        assert pi["leaves"][0] == 12345 and pi["resumed"] == 0
    else:  # no thinking entry on the branch Pi walks: one appended at resume
        assert pi["resumed"] == 1 and kinds[0] == "thinking_level_change" and pi["leaves"][0] == "#0"
