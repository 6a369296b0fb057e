"""Operation sequences written through OUR store, one session file each, for real Pi to read.

Each builder gets a fresh directory and returns the file it produced plus the manager that
wrote it (still open, leaf = the last entry appended), so a test can compare Pi's reading with
both our in-memory state and a fresh ``SessionManager.open`` of the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from rpcd.store import SessionManager, import_session_file
from tests.pi_compat.messages import assistant, bash_execution, tool_result, user, user_with_image

Built = tuple[Path, SessionManager]
Builder = Callable[[Path], Built]

SCENARIOS: dict[str, Builder] = {}


def scenario(builder: Builder) -> Builder:
    SCENARIOS[builder.__name__] = builder
    return builder


def _project(directory: Path) -> str:
    project = directory / "project dir"
    project.mkdir(exist_ok=True)
    return str(project)


def _new(directory: Path) -> SessionManager:
    return SessionManager.create(_project(directory), session_dir=str(directory / "sessions"))


def _file(manager: SessionManager) -> Path:
    path = manager.get_session_file()
    assert path is not None and os.path.exists(path), "the scenario should have written its file"
    return Path(path)


def _turn(manager: SessionManager, question: str, answer: str, **kwargs: object) -> tuple[str, str]:
    u = manager.append_message(user(question))
    a = manager.append_message(assistant(answer, **kwargs))  # type: ignore[arg-type]
    return u, a


@scenario
def linear_chat(directory: Path) -> Built:
    m = _new(directory)
    m.append_model_change("anthropic", "claude-sonnet-4-5")
    m.append_thinking_level_change("medium")
    m.append_message(user("Hi! What does this repo do?"))
    m.append_message(
        assistant(
            "Let me look around.", thinking="List files first.", tool_calls=[("toolu_1", "bash", {"command": "ls"})]
        )
    )
    m.append_message(tool_result("toolu_1", "bash", "README.md\nsrc\n"))
    m.append_message(
        assistant(
            "Two reads.",
            tool_calls=[("toolu_2", "read", {"path": "README.md"}), ("toolu_3", "read", {"path": "nope.txt"})],
        )
    )
    m.append_message(tool_result("toolu_2", "read", "# demo\n"))
    m.append_message(tool_result("toolu_3", "read", "ENOENT: no such file", is_error=True))
    m.append_message(
        assistant("It is a demo project. \u2028 Unicode line separators stay content: \u00e9\u00e8 \U0001f600")
    )
    m.append_message(bash_execution("git status", "On branch main\n"))
    m.append_message(bash_execution("cat .env", "(hidden)", exclude=True))
    m.append_message(user("Thanks. Look at this picture.", blocks=True))
    m.append_message(user_with_image("And this one"))
    m.append_message(assistant("Nice pictures."))
    return _file(m), m


@scenario
def thinking_and_model_changes(directory: Path) -> Built:
    m = _new(directory)
    m.append_model_change("anthropic", "claude-sonnet-4-5")
    m.append_thinking_level_change("off")
    _turn(m, "one", "first answer")
    m.append_thinking_level_change("high")
    m.append_model_change("openai", "gpt-5")
    _turn(m, "two", "second answer", provider="openai", model="gpt-5", thinking_level="high")
    m.append_model_change("google", "gemini-2.5-pro")  # model_change after the last assistant wins
    m.append_thinking_level_change("minimal")
    m.append_message(user("three"))
    # an aborted and an errored assistant are stored like any other (and name the model)
    m.append_message(
        assistant("", provider="faux", model="faux-1", stop_reason="aborted", error_message="Request was aborted")
    )
    m.append_message(user("again"))
    m.append_message(assistant("", provider="faux", model="faux-2", stop_reason="error", error_message="boom"))
    return _file(m), m


@scenario
def model_change_after_assistant(directory: Path) -> Built:
    m = _new(directory)
    _turn(m, "hello", "hi", provider="anthropic", model="claude-haiku-4-5")
    m.append_model_change("openai", "gpt-5-mini")
    return _file(m), m


@scenario
def branch_and_continue(directory: Path) -> Built:
    m = _new(directory)
    m.append_model_change("anthropic", "claude-sonnet-4-5")
    m.append_thinking_level_change("low")
    u1, a1 = _turn(m, "Write a haiku about rust.", "Iron oxide blooms")
    _turn(m, "About the language.", "Borrow checker waits")
    m.branch(a1)  # in-memory only; the next append forks the tree there
    _bu, ba = _turn(m, "About a rusty nail.", "Bent nail in the barn")
    m.branch(a1)
    _turn(m, "Shorter please.", "Rust.")
    m.branch(ba)  # back to the middle branch and continue it: leaf is again the last appended
    _turn(m, "Another nail one.", "Nail, rust, silence.")
    m.branch(u1)
    m.append_message(assistant("A second answer to the first prompt.", provider="openai", model="gpt-5"))
    return _file(m), m


@scenario
def branch_then_non_message_leaf(directory: Path) -> Built:
    m = _new(directory)
    _u1, a1 = _turn(m, "q1", "a1")
    _turn(m, "q2", "a2")
    m.branch(a1)
    m.append_thinking_level_change("high")  # the leaf is a settings entry on a side branch
    return _file(m), m


@scenario
def multiple_roots(directory: Path) -> Built:
    m = _new(directory)
    _turn(m, "first tree", "answer one")
    m.reset_leaf()
    m.append_model_change("openai", "gpt-5")
    _turn(m, "second tree", "answer two", provider="openai", model="gpt-5")
    return _file(m), m


@scenario
def labels_set_changed_and_cleared(directory: Path) -> Built:
    m = _new(directory)
    u1, a1 = _turn(m, "q1", "a1")
    u2, a2 = _turn(m, "q2", "a2")
    m.append_label_change(a1, "first-answer")
    m.append_label_change(u2, "question two")
    m.append_label_change(a1, "renamed")  # latest wins
    m.append_label_change(u2)  # cleared: no label key
    m.append_label_change(u1, "")  # empty clears too (nothing set before)
    m.branch(u1)
    _ub, ab = _turn(m, "side", "side answer")
    m.append_label_change(ab, "on the side branch")  # labels are global, not per branch
    m.append_label_change(a2, "main tip \u00e9")
    return _file(m), m


@scenario
def session_name_with_newlines(directory: Path) -> Built:
    m = _new(directory)
    _turn(m, "name me", "ok")
    m.append_session_info("  First\r\nname\n\n  ")
    m.append_session_info("Refactor:\r\n\r\nparser\rand lexer ")
    return _file(m), m


@scenario
def session_name_cleared(directory: Path) -> Built:
    m = _new(directory)
    _turn(m, "name me", "ok")
    m.append_session_info("temporary")
    _turn(m, "more", "more")
    m.append_session_info(" \r\n ")  # whitespace only: cleared
    return _file(m), m


@scenario
def session_name_on_other_branch(directory: Path) -> Built:
    m = _new(directory)
    _u1, a1 = _turn(m, "q1", "a1")
    m.append_session_info("named on a branch")
    m.branch(a1)
    _turn(m, "q2", "a2")  # the name is the latest session_info in file order, any branch
    return _file(m), m


@scenario
def compactions(directory: Path) -> Built:
    m = _new(directory)
    m.append_model_change("anthropic", "claude-sonnet-4-5")
    m.append_thinking_level_change("medium")
    ids = [_turn(m, f"step {i}", f"done {i}") for i in range(6)]
    m.append_compaction(
        "## Goal\nFix tests.\n",
        ids[3][0],
        48213,
        details={"readFiles": ["a.py"], "modifiedFiles": []},
        usage={"input": 48213, "output": 900, "totalTokens": 49113},
    )
    more = [_turn(m, f"later {i}", f"later done {i}") for i in range(3)]
    m.append_compaction("## Goal\nFix tests.\n## Progress\nAll fixed.\n", more[1][0], 51000, from_hook=True)
    _turn(m, "final", "final answer")
    return _file(m), m


@scenario
def compaction_keeping_nothing(directory: Path) -> Built:
    m = _new(directory)
    _turn(m, "a", "b")
    m.append_compaction("everything so far", None, 1000)  # firstKeptEntryId = its own id
    _turn(m, "c", "d")
    return _file(m), m


@scenario
def compaction_on_abandoned_branch(directory: Path) -> Built:
    m = _new(directory)
    _u1, a1 = _turn(m, "a", "b")
    u2, _a2 = _turn(m, "c", "d")
    m.append_compaction("summary on branch one", u2, 2000)
    _turn(m, "e", "f")
    m.branch(a1)
    _turn(m, "other branch", "no compaction on this path")
    return _file(m), m


@scenario
def branch_summaries(directory: Path) -> Built:
    m = _new(directory)
    _u1, a1 = _turn(m, "start", "started")
    _turn(m, "try A", "A failed")
    m.branch_with_summary(a1, "Tried A; it failed because of X.", details={"files": ["x.py"]})
    _ub, ab = _turn(m, "try B", "B works")
    m.branch_with_summary(ab, "")  # empty summary: an entry, but no context message
    _turn(m, "polish", "polished")
    m.branch_with_summary(a1, "Hook summary", from_hook=True, usage={"input": 10, "output": 5})
    _turn(m, "after hook summary", "ok")
    return _file(m), m


@scenario
def branch_summary_as_new_root(directory: Path) -> Built:
    m = _new(directory)
    _turn(m, "start", "started")
    m.branch_with_summary(None, "Starting over from a summary.")
    _turn(m, "fresh start", "fresh")
    return _file(m), m


@scenario
def custom_entries(directory: Path) -> Built:
    m = _new(directory)
    m.append_model_change("anthropic", "claude-sonnet-4-5")
    m.append_custom_entry("plan-mode", {"enabled": True, "steps": ["read", "edit"]})
    m.append_custom_entry("no-data")
    m.append_custom_message_entry("plan-mode", "Plan mode is ON.", True, {"source": "ext"})
    m.append_custom_message_entry("hidden-ctx", [{"type": "text", "text": "hidden context"}], False)
    _turn(m, "go", "going")
    m.append_custom_message_entry(
        "with-image", [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}], True
    )
    m.append_custom_entry("state", [1, 2, {"nested": None}])
    _turn(m, "again", "again")
    return _file(m), m


def _labelled_session(directory: Path) -> tuple[SessionManager, dict[str, str]]:
    """u1 a1 [label a1] u2 a2 [label u2] u3 a3, with a label entry in the middle of the path."""
    m = _new(directory)
    m.append_model_change("anthropic", "claude-sonnet-4-5")
    m.append_thinking_level_change("high")
    u1, a1 = _turn(m, "one", "uno")
    lab1 = m.append_label_change(a1, "checkpoint")
    u2, a2 = _turn(m, "two", "dos")
    lab2 = m.append_label_change(u2, "second question")
    u3, a3 = _turn(m, "three", "tres")
    m.append_compaction("summary up to two", lab2, 900)  # boundary on a label: remapped by a fork
    u4, a4 = _turn(m, "four", "cuatro")
    return m, {
        "u1": u1, "a1": a1, "lab1": lab1, "u2": u2, "a2": a2, "lab2": lab2,
        "u3": u3, "a3": a3, "u4": u4, "a4": a4,
    }  # fmt: skip


@scenario
def fork_before_user_message(directory: Path) -> Built:
    m, ids = _labelled_session(directory)
    result = m.fork(ids["u3"], "before")  # copies root..a2, labels re-emitted at the end
    assert result.session_file is not None
    return _file(m), m


@scenario
def fork_at_entry_then_continue(directory: Path) -> Built:
    m, ids = _labelled_session(directory)
    m.fork(ids["a2"], "at")
    _turn(m, "continuing the fork", "continued")
    return _file(m), m


@scenario
def clone_whole_branch(directory: Path) -> Built:
    m, _ids = _labelled_session(directory)
    leaf = m.get_leaf_id()
    assert leaf is not None
    m.fork(leaf, "at")  # clone: includes the compaction whose boundary was a label
    return _file(m), m


@scenario
def fork_of_side_branch_with_relabel(directory: Path) -> Built:
    m, ids = _labelled_session(directory)
    m.append_label_change(ids["a1"], "relabelled later")
    m.append_label_change(ids["u2"])  # cleared: not re-emitted
    m.branch(ids["a2"])
    _ub, ab = _turn(m, "side", "side answer")
    m.fork(ab, "at")
    return _file(m), m


@scenario
def fork_before_root_message_then_reply(directory: Path) -> Built:
    m = _new(directory)
    u1, _a1 = _turn(m, "root question", "root answer")
    result = m.fork(u1, "before")  # empty session with parentSession, no file yet
    assert result.session_file is not None and not os.path.exists(result.session_file)
    _turn(m, "a different first question", "a different answer")
    return _file(m), m


@scenario
def created_branched_session_directly(directory: Path) -> Built:
    m, ids = _labelled_session(directory)
    m.create_branched_session(ids["lab1"])  # a label entry as the fork leaf
    _turn(m, "after forking at a label", "ok")
    return _file(m), m


@scenario
def new_session_with_parent(directory: Path) -> Built:
    m = _new(directory)
    _turn(m, "old session", "old")
    previous = m.get_session_file()
    m.new_session(parent_session=previous)
    _turn(m, "new session", "new")
    return _file(m), m


@scenario
def fork_from_into_other_cwd(directory: Path) -> Built:
    m = _new(directory)
    m.append_thinking_level_change("high")
    _turn(m, "source", "source answer")
    m.append_label_change(m.get_entries()[1]["id"], "kept verbatim")
    other = directory / "other project"
    other.mkdir()
    forked = SessionManager.fork_from(str(_file(m)), str(other), str(directory / "other-sessions"))
    _turn(forked, "continue elsewhere", "continued")
    return _file(forked), forked


@scenario
def opened_without_final_newline_then_appended(directory: Path) -> Built:
    m = _new(directory)
    _turn(m, "q", "a")
    path = _file(m)
    data = path.read_bytes()
    path.write_bytes(data.rstrip(b"\n"))
    reopened = SessionManager.open(str(path))
    _turn(reopened, "after the repair", "still one entry per line")
    return path, reopened


@scenario
def opened_and_appended_before_assistant(directory: Path) -> Built:
    m = _new(directory)
    _turn(m, "q", "a")
    reopened = SessionManager.open(str(_file(m)))
    reopened.append_message(user("an opened file counts as flushed"))
    reopened.append_custom_entry("ext-state", {"n": 1})
    return _file(reopened), reopened


@scenario
def legacy_v1_migrated_by_us(directory: Path) -> Built:
    project = _project(directory)
    sessions = directory / "sessions"
    sessions.mkdir()
    path = sessions / "2024-01-01T00-00-00-000Z_legacy.jsonl"
    lines = [
        {"type": "session", "id": "legacy-v1", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": project},
        {"type": "model_change", "timestamp": "2024-01-01T00:00:01.000Z", "provider": "anthropic", "modelId": "c-3"},
        {"type": "message", "timestamp": "2024-01-01T00:00:02.000Z", "message": user("old q1")},
        {"type": "message", "timestamp": "2024-01-01T00:00:03.000Z", "message": assistant("old a1")},
        {"type": "message", "timestamp": "2024-01-01T00:00:04.000Z", "message": user("old q2")},
        {"type": "message", "timestamp": "2024-01-01T00:00:05.000Z", "message": assistant("old a2")},
        {
            "type": "compaction",
            "timestamp": "2024-01-01T00:00:06.000Z",
            "summary": "old summary",
            "firstKeptEntryIndex": 4,
            "tokensBefore": 500,
        },
        {
            "type": "message",
            "timestamp": "2024-01-01T00:00:07.000Z",
            "message": {"role": "hookMessage", "customType": "h", "content": "hook", "display": True, "timestamp": 1},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    m = SessionManager.open(str(path))  # migrates v1 -> v3 and rewrites the file
    _turn(m, "new q", "new a")
    return path, m


@scenario
def imported_copy(directory: Path) -> Built:
    m = _new(directory)
    _turn(m, "to be imported", "ok")
    m.append_session_info("imported one")
    destination, copied = import_session_file(str(_file(m)), str(directory / "import-target"))
    assert copied
    imported = SessionManager.open(destination)
    _turn(imported, "after import", "ok")
    return Path(destination), imported
