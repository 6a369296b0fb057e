"""Real Pi 0.85.0 reads what the session library writes: a renamed session that was not current, the
exported branch (the same context, and line for line what Pi's own ``/export`` of JSONL writes), and
the ``parentSession`` of a new session in another project. Renames run beside Pi's own picker rename
on identical copies (hypothesis over names JavaScript and Python trim differently)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpcd.core.errors import InvalidArgumentError
from rpcd.store import SessionManager
from rpcd.store.library import rename_session_file
from tests.driver import Daemon
from tests.pi_compat.oracle import PiReader

from .messages import assistant, user


def lines(path: str | Path) -> list[dict[str, Any]]:
    # split on LF only: str.splitlines() also splits on U+0085, U+2028, ... inside names
    return [json.loads(line) for line in Path(path).read_text().split("\n") if line.strip()]


def daemon(tmp_path: Path, *args: str) -> Daemon:
    return Daemon("--agent-dir", str(tmp_path / "agent"), *args, env={"XDG_DATA_HOME": str(tmp_path / "xdg")})


def test_pi_reads_the_name_given_to_a_session_that_was_not_current(tmp_path: Path, pi_reader: PiReader) -> None:
    project = tmp_path / "p"
    project.mkdir()
    with daemon(tmp_path, "--cwd", str(project)) as d:
        d.initialize()
        d.call("prompt", {"text": "first"})
        old = d.call("getState")["sessionFile"]
        d.call("newSession")
        d.call("prompt", {"text": "second"})
        stored = d.call("renameSession", {"sessionFile": old, "name": " Release\r\n\r\nnotes\ufeff "})["name"]
    (reading,) = pi_reader.inspect([old])
    assert "error" not in reading, reading
    assert reading["sessionName"] == stored == "Release notes"
    assert reading["sha256Before"] == reading["sha256After"]  # Pi's open changes nothing
    assert reading["entryIds"][-1] == lines(old)[-1]["id"] and reading["typeCounts"]["session_info"] == 1
    assert reading["leafId"] == lines(old)[-1]["id"]


names = st.text(alphabet=st.sampled_from(list("ab \t\r\n\ufeff\x1c\x85\u3000\u2028\u00a0")), max_size=8)


@settings(max_examples=40, deadline=None)
@given(name=names)
def test_rename_writes_what_pis_picker_rename_writes(pi_reader: PiReader, name: str) -> None:
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        sm = SessionManager.create(str(tmp), str(tmp / "s"))
        sm.append_message(user("hello"))
        sm.append_message(assistant("hi"))
        source = sm.get_session_file()
        assert source is not None
        ours, theirs = tmp / "ours.jsonl", tmp / "theirs.jsonl"
        shutil.copyfile(source, ours)
        shutil.copyfile(source, theirs)
        original = ours.read_bytes()
        done = pi_reader.library("rename", file=str(theirs), name=name)
        try:
            rename_session_file(str(ours), name)
        except InvalidArgumentError:
            assert done == {"skipped": True}  # Pi's picker does nothing with an empty name either
            assert ours.read_bytes() == original == theirs.read_bytes()
            return
        assert done == {"file": str(theirs)}
        mine, pis = lines(ours), lines(theirs)
        assert mine[:-1] == pis[:-1] and ours.read_bytes().startswith(original)
        assert list(mine[-1]) == list(pis[-1])  # key order
        assert {**mine[-1], "id": "", "timestamp": ""} == {**pis[-1], "id": "", "timestamp": ""}
        ours_read, theirs_read = pi_reader.inspect([ours, theirs])
        assert ours_read["sessionName"] == theirs_read["sessionName"]


def test_the_exported_branch_is_what_pis_export_writes_and_opens_with_the_same_context(
    tmp_path: Path, pi_reader: PiReader
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    with daemon(tmp_path, "--cwd", str(project)) as d:
        d.initialize()
        d.call("prompt", {"text": "one"})
        d.call("prompt", {"text": "two"})
        session_file = d.call("getState")["sessionFile"]
    # a second branch in the same file, a label and a compaction on it (the store makes them)
    sm = SessionManager.open(session_file)
    first_answer = next(e for e in sm.get_entries() if e["type"] == "message" and e["message"]["role"] == "assistant")
    sm.branch(first_answer["id"])
    sm.append_label_change(first_answer["id"], "here")
    sm.append_compaction("what happened before", first_answer["id"], 99)
    sm.append_message(user("three, on another branch"))
    sm.append_message(assistant("three answered"))
    sm.close()
    out = tmp_path / "exported.jsonl"
    with daemon(tmp_path, "--resume", session_file) as d:
        d.initialize()
        assert d.call("exportJsonl", {"outputPath": str(out)}) == {"path": str(out)}
        messages = d.call("getMessages")["messages"]
        state = d.call("getState")
    pis_export = tmp_path / "pi-exported.jsonl"
    assert pi_reader.library("exportJsonl", file=session_file, out=str(pis_export)) == {"file": str(pis_export)}
    ours, theirs = out.read_text().split("\n"), pis_export.read_text().split("\n")
    assert len(ours) == len(theirs)
    assert {**json.loads(ours[0]), "timestamp": ""} == {**json.loads(theirs[0]), "timestamp": ""}
    assert list(json.loads(ours[0])) == list(json.loads(theirs[0]))
    assert ours[1:] == theirs[1:]  # byte for byte: JSON.stringify({...entry, parentId})
    exported, original = pi_reader.inspect([out, session_file])
    assert "error" not in exported, exported
    assert exported["context"]["messages"] == original["context"]["messages"] == messages
    assert exported["leafId"] == original["leafId"] == state["leafId"]
    assert exported["header"]["id"] == state["sessionId"] and exported["roots"] == [exported["pathIds"][0]]
    assert exported["pathIds"] == original["pathIds"] and len(exported["entryIds"]) < len(original["entryIds"])
    assert exported["labels"] == {first_answer["id"]: "here"}


def test_pi_reads_the_parent_of_a_new_session_in_another_project(tmp_path: Path, pi_reader: PiReader) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    with daemon(tmp_path, "--cwd", str(a)) as d:
        d.initialize()
        d.call("prompt", {"text": "in a"})
        parent = d.call("getState")["sessionFile"]
        d.call("newSession", {"cwd": str(b), "parentSession": parent})
        d.call("prompt", {"text": "in b"})
        child = d.call("getState")["sessionFile"]
    (reading,) = pi_reader.inspect([child])
    assert reading["header"]["parentSession"] == parent and reading["cwd"] == str(b)
    assert [m["role"] for m in reading["context"]["messages"]] == ["user", "assistant"]


@pytest.fixture(autouse=True)
def _agent_dir(agent_dir: Path) -> Path:  # nothing here touches ~/.pi
    return agent_dir
