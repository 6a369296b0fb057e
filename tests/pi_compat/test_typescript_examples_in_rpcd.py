"""Pi's own example extensions, TypeScript as Pi ships them, run in rpcd's Node extension host beside
real ``pi --mode rpc`` running the same file: the session files, the session events, the extension UI
requests, the extension errors and the request bodies are equal (``extension_programs.py`` normalises
both sides; the differences Pi documents are the ones the Python ports' test allows)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.node_host import node_host_env
from tests.pi_compat.extension_programs import ExtProgram, run_both
from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.test_extension_ports_against_pi import PROGRAMS as PORTED
from tests.pi_compat.test_extension_ports_against_pi import assert_same_behaviour, call, reply

TIDY_SKILL = "---\nname: tidy\ndescription: Tidy a file.\n---\nTidy it.\n"

TYPESCRIPT_ONLY: dict[str, ExtProgram] = {
    "hello": ExtProgram("hello.ts", "", [("prompt", "greet the world"), ("settled",)],
                        script=[call("hello", {"name": "World"}), {"text": "greeted"}]),
    "rpc-demo": ExtProgram(
        "rpc-demo.ts", "",
        [("prompt", "clean up"), ("settled",), ("prompt", "/rpc-input"), ("prompt", "/rpc-input"),
         ("prompt", "/rpc-editor"), ("prompt", "/rpc-prefill"), ("call", "new_session", {}, "newSession", {})],
        script=[call("bash", {"command": "sudo rm -rf ./nothing"}), call("bash", {"command": "echo fine"}, "call_2"),
                {"text": "done"}],
        ui={"select": {"value": "Block"}, "input": [{"value": "forty-two"}, {"cancelled": True}],
            "editor": {"value": "a\nb"}, "confirm": {"confirmed": False}}),
    "status-line": ExtProgram("status-line.ts", "", [("prompt", "one"), ("settled",), ("prompt", "two"), ("settled",)],
                              script=[{"text": "first"}, {"text": "second"}]),
    "widget-placement": ExtProgram("widget-placement.ts", "", [("prompt", "hi"), ("settled",)],
                                   script=[{"text": "hello"}]),
    "pirate": ExtProgram("pirate.ts", "",
                         [("prompt", "/pirate"), ("prompt", "ahoy"), ("settled",), ("prompt", "/pirate")],
                         script=[{"text": "arr"}]),
    "bookmark": ExtProgram("bookmark.ts", "", [("prompt", "hi"), ("settled",), ("prompt", "/bookmark best"),
                                               ("prompt", "/unbookmark"), ("prompt", "/unbookmark")],
                           script=[{"text": "hello"}]),
    "inline-bash": ExtProgram("inline-bash.ts", "", [("prompt", "the answer is !{echo 42} and !{exit 3}"),
                                                     ("settled",)], script=[{"text": "ok"}]),
    "structured-output": ExtProgram(  # a terminating tool result ends the run
        "structured-output.ts", "", [("prompt", "summarize"), ("settled",)],
        script=[call("structured_output", {"headline": "H", "summary": "S", "actionItems": ["a", "b"]}),
                {"text": "never"}]),
    "bash-spawn-hook": ExtProgram(  # Pi's own bash tool, created in the extension: it runs in the host
        "bash-spawn-hook.ts", "", [("prompt", "run"), ("settled",)],
        script=[call("bash", {"command": "echo hook=$PI_SPAWN_HOOK"}), {"text": "ran"}],
        agent_files={".profile": "true"}),  # ~ is the agent dir: its ~/.profile (JSON "true": the true command)
    "confirm-destructive": ExtProgram(
        "confirm-destructive.ts", "", [("prompt", "hi"), ("settled",), ("call", "new_session", {}, "newSession", {}),
                                       ("call", "new_session", {}, "newSession", {})],
        script=[{"text": "hello"}], ui={"confirm": [{"confirmed": False}, {"confirmed": True}]}),
    "timed-confirm": ExtProgram(
        "timed-confirm.ts", "", [("prompt", "/timed"), ("prompt", "/timed-select"), ("prompt", "/timed-signal")],
        ui={"confirm": [{"confirmed": True}, {"confirmed": False}], "select": {"value": "Option B"}}),
    "custom-compaction": ExtProgram(  # no Gemini model: it says so and the default compaction runs
        "custom-compaction.ts", "", [("prompt", "hi"), ("settled",), ("prompt", "more"), ("settled",),
                                     ("call", "compact", {}, "compact", {})],
        script=[{"text": "hello"}, {"text": "again"}, {"text": "## Goal\nsummary"}]),
    "dynamic-resources": ExtProgram(
        "dynamic-resources/index.ts", "", [("prompt", "/dynamic go"), ("settled",),
                                           ("prompt", "/skill:dynamic-resources now"), ("settled",)],
        script=[{"text": "one"}, {"text": "two"}]),
    "claude-rules": ExtProgram(
        "claude-rules.ts", "", [("prompt", "hi"), ("settled",)], script=[{"text": "ok"}],
        project_files={".claude/rules/style.md": "Use tabs.\n", ".claude/rules/deep/naming.md": "Short names.\n"}),
    "notify": ExtProgram(  # it writes terminal escapes to process.stdout: the host's stdout stays the protocol's
        "notify.ts", "", [("prompt", "hi"), ("settled",), ("prompt", "again"), ("settled",)],
        script=[{"text": "one"}, {"text": "two"}]),
    "message-renderer": ExtProgram(  # the file is written at the first reply: then the messages are in it
        "message-renderer.ts", "", [("prompt", "/status warn disk almost full"), ("prompt", "/status all good"),
                                    ("prompt", "hi"), ("settled",)], script=[{"text": "ok"}]),
    "prompt-customizer": ExtProgram(  # the system prompt sent, with its guidance (rpcd has no --append-system-prompt)
        "prompt-customizer.ts", "", [("prompt", "hi"), ("settled",)], http=[reply("hello")],
        agent_texts={"APPEND_SYSTEM.md": "Answer in haiku.\n", "skills/tidy/SKILL.md": TIDY_SKILL}),
    "input-transform-streaming": ExtProgram(  # `git diff --stat` prepended to a prompt that mentions changes
        "input-transform-streaming.ts", "", [("prompt", "what changes did I make?"), ("settled",),
                                             ("prompt", "nothing to see"), ("settled",)],
        script=[{"text": "you edited notes"}, {"text": "ok"}], git_init=True,
        project_files={"notes.txt": "one\n"}, dirty_files={"notes.txt": "one\ntwo\n"}),
    "dirty-repo-guard": ExtProgram(  # a new session with uncommitted changes: refused, then allowed
        "dirty-repo-guard.ts", "", [("prompt", "hi"), ("settled",), ("call", "new_session", {}, "newSession", {}),
                                    ("call", "new_session", {}, "newSession", {})],
        script=[{"text": "hello"}], git_init=True, project_files={"a.txt": "a\n"},
        dirty_files={"a.txt": "changed\n", "b.txt": "new\n"},
        ui={"select": [{"value": "No, let me commit first"}, {"value": "Yes, proceed anyway"}]}),
    "auto-commit-on-exit": ExtProgram(  # the session's shutdown (a new session) commits with the last reply
        "auto-commit-on-exit.ts", "", [("prompt", "hi"), ("settled",), ("call", "new_session", {}, "newSession", {}),
                                       ("prompt", "again"), ("settled",)],
        script=[{"text": "Renamed the helper\nand more"}, {"text": "ok"}], git_init=True,
        project_files={"a.txt": "a\n"}, dirty_files={"a.txt": "changed\n"}),
    "commands": ExtProgram(  # by source: the user's prompts and skills (the extensions' list has Pi's /llama)
        "commands.ts", "", [("prompt", "/commands prompt"), ("prompt", "/commands skill"), ("prompt", "/commands zzz")],
        ui={"select": [{"value": "/review - Review the diff"}, {"cancelled": True}], "confirm": {"confirmed": True}},
        agent_texts={"prompts/review.md": "---\ndescription: Review the diff\n---\nReview $@\n",
                     "skills/tidy/SKILL.md": TIDY_SKILL}),
}
"""Pi's examples that need no Python port to be compared: Pi's TypeScript in both. The examples not
compared, and why, are listed in docs/pi-compat.md ("Pi's example extensions in rpcd's Node
extension host")."""

PROGRAMS = {**PORTED, **TYPESCRIPT_ONLY}


DEFAULT = ("api-probe", "plan-mode", "rpc-demo", "session-name")
"""A few programs in the default run (the API probe covers most members; plan-mode is a directory
extension with a helper module; rpc-demo Pi's RPC-mode UI demo: a blocking tool_call gate, every
dialog, session_before_switch; session-name a synchronous call that sets off handlers); every program
with ``RPCD_LONG=1``."""


def _programs() -> list[Any]:
    long_only = [pytest.mark.slow, pytest.mark.skipif(os.environ.get("RPCD_LONG") != "1",
                                                      reason="long variant: RPCD_LONG=1")]
    return [name if name in DEFAULT else pytest.param(name, marks=long_only) for name in PROGRAMS]


@pytest.fixture(scope="module")
def node_env() -> dict[str, str]:
    return node_host_env()


@pytest.mark.parametrize("name", _programs())
def test_pi_s_typescript_example_behaves_the_same_in_rpcd(pi_oracle: PiOracle, node_env: dict[str, str],
                                                            tmp_path: Path, name: str) -> None:
    pi, ours = run_both(pi_oracle, tmp_path, PROGRAMS[name], typescript=node_env)
    if name == "message-renderer":  # its details carry Date.now(): the same shape, not the same millisecond
        for side in (pi, ours):
            side["entries"] = [(*e[:4], {**e[4], "timestamp": "<now>"}) if e[0] == "custom_message" else e
                               for e in side["entries"]]
    assert_same_behaviour(name, pi, ours)
