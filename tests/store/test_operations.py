"""Fork/clone, fork-from-file, import, list and continue_recent against Pi 0.85.0's results."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from rpcd.core.errors import (
    InvalidEntryError,
    MissingSessionCwdError,
    NotASessionError,
    SessionFileNotFoundError,
    SessionNotSavedError,
)
from rpcd.store import (
    SessionManager,
    assert_session_cwd_exists,
    default_session_dir,
    get_agent_dir,
    import_session,
    import_session_file,
)

from .conftest import copy_fixture, load_inspect
from .test_writing import ASSISTANT, USER


def raw_lines(path: str | Path) -> list[bytes]:
    return Path(path).read_bytes().splitlines()


def open_copy(name: str, directory: Path) -> SessionManager:
    return SessionManager.open(str(copy_fixture(load_inspect(name)["file"], directory)))


def test_clone_of_branched_tail_matches_pis_fork_file(tmp_path: Path) -> None:
    """Pi's ``branched_fork_of_tail2``: path copied verbatim, label re-emitted with its timestamp."""
    sm = open_copy("branched", tmp_path)
    source = str(sm.get_session_file())
    new_file = sm.create_branched_session("d60b7437")
    assert new_file is not None and sm.get_session_file() == new_file
    pi = raw_lines(copy_fixture(load_inspect("branched_fork_of_tail2")["file"], tmp_path))
    ours = raw_lines(new_file)
    header = json.loads(ours[0])
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert header["parentSession"] == source and header["id"] == sm.get_session_id()
    assert ours[1:-1] == pi[1:-1]
    mine, theirs = json.loads(ours[-1]), json.loads(pi[-1])
    assert {**mine, "id": None} == {**theirs, "id": None}
    assert sm.get_leaf_id() == mine["id"] and sm.get_labels() == {"0d40de9d": "best-haiku"}


def test_fork_drops_label_entries_and_reparents_like_pi(tmp_path: Path) -> None:
    """Pi's ``label_in_path_fork_of_a2``: u2.parentId becomes a1, label re-emitted at the end."""
    sm = open_copy("label_in_path", tmp_path)
    new_file = sm.create_branched_session("5589072a")
    pi = raw_lines(copy_fixture(load_inspect("label_in_path_fork_of_a2")["file"], tmp_path))
    ours = raw_lines(str(new_file))
    assert ours[1:-1] == pi[1:-1]
    assert {**json.loads(ours[-1]), "id": None} == {**json.loads(pi[-1]), "id": None}


def test_fork_before_a_user_message_copies_up_to_its_parent(tmp_path: Path) -> None:
    sm = open_copy("branched", tmp_path)
    result = sm.fork("0e20b8fe", "before")  # bB (user) -> path ends at a1
    assert result.selected_text is not None and result.session_file == sm.get_session_file()
    assert sm.get_leaf_id() == "8fc63b40"
    assert [e["id"] for e in sm.get_branch()] == ["8fa00107", "883ada52", "0af78568", "8fc63b40"]
    assert os.path.exists(str(result.session_file))


def test_fork_at_any_entry_and_clone_keep_that_entry(tmp_path: Path) -> None:
    sm = open_copy("branched", tmp_path)
    result = sm.fork("d4573c75", "at")
    assert result.selected_text is None and sm.get_leaf_id() == "d4573c75"
    pi = raw_lines(copy_fixture(load_inspect("branched_fork_of_bB2")["file"], tmp_path))
    assert raw_lines(str(result.session_file))[1:] == pi[1:]


def test_fork_before_a_non_user_entry_is_invalid_and_changes_nothing(tmp_path: Path) -> None:
    sm = open_copy("branched", tmp_path)
    before = (sm.get_session_file(), sm.get_leaf_id(), len(sm.get_entries()))
    for entry_id, position in (("8fc63b40", "before"), ("nope", "at"), ("nope", "before")):
        with pytest.raises(InvalidEntryError, match=r"^Invalid entry ID for forking$"):
            sm.fork(entry_id, position)  # type: ignore[arg-type]
    assert (sm.get_session_file(), sm.get_leaf_id(), len(sm.get_entries())) == before


def test_fork_of_an_unsaved_session_needs_a_reply_first(agent_dir: Path, project: Path) -> None:
    sm = SessionManager.create(str(project))
    sm.append_model_change("anthropic", "m")
    user = sm.append_message(USER)
    model_change = sm.get_entries()[0]["id"]
    for entry_id, position in ((model_change, "at"), (user, "before"), (user, "at")):
        with pytest.raises(SessionNotSavedError, match="has not been saved yet"):
            sm.fork(entry_id, position)  # type: ignore[arg-type]
    # ... except "before" a root user message, which only starts an empty child session
    unsaved = SessionManager.create(str(project))
    root = unsaved.append_message(USER)
    old_file = unsaved.get_session_file()
    result = unsaved.fork(root, "before")
    assert result.selected_text == "Hi" and unsaved.get_header().get("parentSession") == old_file


def test_fork_before_a_root_user_message_starts_an_empty_child_session(agent_dir: Path, project: Path) -> None:
    sm = SessionManager.create(str(project))
    root = sm.append_message({**USER, "content": "root user message"})
    sm.append_message(ASSISTANT)
    old_file = sm.get_session_file()
    result = sm.fork(root, "before")
    assert result.selected_text == "root user message"
    assert sm.get_entries() == [] and sm.get_header()["parentSession"] == old_file
    assert not os.path.exists(str(result.session_file))


def test_fork_before_first_user_message_keeps_cwd_and_defers_the_file(agent_dir: Path, project: Path) -> None:
    sm = SessionManager.create(str(project))
    sm.append_model_change("anthropic", "m")
    sm.append_thinking_level_change("off")
    user = sm.append_message(USER)
    sm.append_message(ASSISTANT)
    old_file = sm.get_session_file()
    result = sm.fork(user, "before")
    header = sm.get_header()
    assert header["cwd"] == str(project) and header["parentSession"] == old_file
    assert str(result.session_file).endswith(f"_{header['id']}.jsonl")
    assert not os.path.exists(str(result.session_file))  # no assistant on the copied path
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    assert len(raw_lines(str(result.session_file))) == 5


def test_fork_keeps_the_compaction_boundary(tmp_path: Path) -> None:
    sm = open_copy("compaction", tmp_path)
    context = sm.build_session_context()
    sm.create_branched_session(str(sm.get_leaf_id()))
    assert sm.build_session_context() == context
    reopened = SessionManager.open(str(sm.get_session_file()))
    assert reopened.build_session_context() == context


def test_in_memory_branching_replaces_entries_without_a_file(tmp_path: Path) -> None:
    sm = SessionManager.in_memory(str(tmp_path))
    u1 = sm.append_message(USER)
    sm.append_label_change(u1, "start")
    a1 = sm.append_message(ASSISTANT)
    assert sm.create_branched_session(a1) is None
    assert [e["type"] for e in sm.get_entries()] == ["message", "message", "label"]
    assert sm.get_labels() == {u1: "start"} and not sm.is_persisted()


def test_fork_from_copies_every_entry_into_the_target_cwd(agent_dir: Path, tmp_path: Path) -> None:
    source = copy_fixture(load_inspect("linear")["file"], tmp_path)
    target_cwd = str(tmp_path / "other project")
    sm = SessionManager.fork_from(str(source), target_cwd)
    path = str(sm.get_session_file())
    assert os.path.dirname(path) == default_session_dir(target_cwd)
    header = json.loads(raw_lines(path)[0])
    assert header["cwd"] == target_cwd and header["parentSession"] == str(source)
    assert raw_lines(path)[1:] == raw_lines(source)[1:]
    pi = load_inspect("forkFrom_linear_into_cwd2")
    assert sm.get_leaf_id() == pi["leafId"] and [e["id"] for e in sm.get_branch()] == pi["pathIds"]
    assert sm.get_cwd() == target_cwd and sm.is_flushed()


def test_fork_from_a_non_session_is_refused(agent_dir: Path, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.jsonl"
    bogus.write_text('{"hello": 1}\n')
    with pytest.raises(NotASessionError, match="Cannot fork"):
        SessionManager.fork_from(str(bogus), str(tmp_path))
    with pytest.raises(SessionFileNotFoundError):
        SessionManager.fork_from(str(tmp_path / "missing.jsonl"), str(tmp_path))


def test_import_adds_numeric_suffixes_and_never_overwrites(tmp_path: Path) -> None:
    source = copy_fixture(load_inspect("linear")["file"], tmp_path)
    sessions = tmp_path / "sessions"
    first, copied = import_session_file(str(source), str(sessions))
    assert copied and first == str(sessions / source.name)
    Path(first).write_bytes(Path(first).read_bytes() + b"\n")  # distinguish it
    second, _ = import_session_file(str(source), str(sessions))
    third, _ = import_session_file(str(source), str(sessions))
    stem = source.name[: -len(".jsonl")]
    assert [Path(second).name, Path(third).name] == [f"{stem}-1.jsonl", f"{stem}-2.jsonl"]
    assert Path(first).read_bytes() == source.read_bytes() + b"\n"
    assert Path(second).read_bytes() == source.read_bytes()
    assert oct(os.stat(second).st_mode & 0o777) == "0o600"


def test_import_of_a_file_already_in_place_copies_nothing(tmp_path: Path) -> None:
    source = copy_fixture(load_inspect("linear")["file"], tmp_path)
    assert import_session_file(str(source), str(tmp_path)) == (str(source), False)
    assert sorted(os.listdir(tmp_path)) == [source.name]


def test_import_of_a_missing_file_fails_before_anything_happens(tmp_path: Path) -> None:
    with pytest.raises(SessionFileNotFoundError, match=r"^File not found: "):
        import_session_file(str(tmp_path / "nope.jsonl"), str(tmp_path / "sessions"))
    assert not (tmp_path / "sessions").exists()


def test_import_session_refuses_non_sessions_without_copying(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.jsonl"
    bogus.write_text("not json at all\n")
    with pytest.raises(NotASessionError):
        import_session(str(bogus), str(tmp_path / "sessions"))
    assert not (tmp_path / "sessions").exists()


def test_import_with_a_missing_cwd_removes_its_copy_and_retry_with_override_works(tmp_path: Path) -> None:
    source = tmp_path / "missing-cwd.jsonl"
    source.write_text(
        '{"type":"session","version":3,"id":"missing-cwd-session","timestamp":"2026-01-01T00:00:00.000Z",'
        '"cwd":"/nonexistent/dir/xyz"}\n'
    )
    sessions = tmp_path / "sessions"
    with pytest.raises(MissingSessionCwdError) as caught:
        import_session(str(source), str(sessions), fallback_cwd="/here")
    assert str(caught.value) == (
        "Stored session working directory does not exist: /nonexistent/dir/xyz\n"
        f"Session file: {sessions / 'missing-cwd.jsonl'}\nCurrent working directory: /here"
    )
    assert os.listdir(sessions) == []
    sm = import_session(str(source), str(sessions), cwd_override=str(tmp_path))
    assert sm.get_cwd() == str(tmp_path) and sm.get_header()["cwd"] == "/nonexistent/dir/xyz"
    assert sm.get_session_file() == str(sessions / "missing-cwd.jsonl")


def test_in_memory_sessions_skip_the_cwd_check(tmp_path: Path) -> None:
    assert_session_cwd_exists(SessionManager.in_memory("/nonexistent/x"), str(tmp_path))
    with pytest.raises(MissingSessionCwdError):
        assert_session_cwd_exists(SessionManager.create("/nonexistent/x", str(tmp_path)), str(tmp_path))


def _write_session(directory: Path, name: str, lines: list[dict[str, Any]]) -> Path:
    path = directory / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_list_reports_names_first_messages_counts_sorted_by_activity(agent_dir: Path, project: Path) -> None:
    directory = Path(default_session_dir(str(project)))
    header = {"type": "session", "version": 3, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(project)}

    def msg(role: str, text: str, ms: int) -> dict[str, Any]:
        return {"type": "message", "id": text[:8], "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
                "message": {"role": role, "content": [{"type": "text", "text": text}], "timestamp": ms}}  # fmt: skip

    _write_session(directory, "old.jsonl", [{**header, "id": "old"}, msg("user", "older question", 1_000)])
    _write_session(
        directory,
        "new.jsonl",
        [
            {**header, "id": "new", "parentSession": "/p.jsonl"},
            msg("assistant", "greeting", 5_000),
            msg("user", "newer question", 9_000),
            {"type": "session_info", "id": "i1", "parentId": None, "timestamp": "x", "name": " Named "},
        ],
    )
    (directory / "junk.jsonl").write_text("garbage\n")
    (directory / "notes.txt").write_text("ignored")
    infos = SessionManager.list(str(project))
    assert [i.id for i in infos] == ["new", "old"]
    new = infos[0]
    assert (new.name, new.first_message, new.message_count, new.parent_session_path) == (
        "Named",
        "newer question",
        2,
        "/p.jsonl",
    )
    assert new.modified.timestamp() == 9.0 and new.cwd == str(project)
    assert infos[1].name is None and infos[1].first_message == "older question"


def test_continue_recent_opens_the_newest_valid_session(agent_dir: Path, project: Path) -> None:
    first = SessionManager.create(str(project))
    first.append_message(USER)
    first.append_message(ASSISTANT)
    path = str(first.get_session_file())
    later = time.time() + 10
    junk = Path(os.path.dirname(path)) / "zzz.jsonl"
    junk.write_text("not a session\n")
    os.utime(junk, (later, later))
    resumed = SessionManager.continue_recent(str(project))
    assert resumed.get_session_file() == path and resumed.get_leaf_id() == first.get_leaf_id()
    empty_project = project / "sub"
    empty_project.mkdir()
    fresh = SessionManager.continue_recent(str(empty_project))
    assert fresh.get_entries() == [] and not os.path.exists(str(fresh.get_session_file()))


def test_agent_dir_comes_from_the_environment_with_tilde_expansion(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/custom-agent")
    assert get_agent_dir() == os.path.expanduser("~/custom-agent")
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    assert get_agent_dir() == os.path.join(os.path.expanduser("~"), ".pi", "agent")


def test_open_of_a_missing_path_starts_a_session_there(tmp_path: Path) -> None:
    target = tmp_path / "later.jsonl"
    sm = SessionManager.open(str(target), cwd_override=str(tmp_path))
    assert sm.get_session_file() == str(target) and not target.exists()
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    assert json.loads(raw_lines(target)[0])["id"] == sm.get_session_id()
    with pytest.raises(SessionFileNotFoundError):
        SessionManager.open(str(tmp_path / "nope.jsonl"), must_exist=True)
