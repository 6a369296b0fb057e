"""The oracle itself: it can see a difference, and "cannot install" is told apart from "broken"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rpcd.store import SessionManager
from tests.pi_compat.messages import assistant, user
from tests.pi_compat.oracle import OracleUnavailable, PiReader, ensure_oracle
from tests.pi_compat.reading import differences, reading_of, reading_of_file

pytestmark = pytest.mark.node


def _written(tmp_path: Path) -> SessionManager:
    project = tmp_path / "project"
    project.mkdir()
    manager = SessionManager.create(str(project), session_dir=str(tmp_path / "sessions"))
    manager.append_model_change("anthropic", "claude-sonnet-4-5")
    manager.append_message(user("q"))
    manager.append_message(assistant("a"))
    return manager


def test_oracle_notices_an_entry_our_writer_does_not_know(pi_reader: PiReader, tmp_path: Path) -> None:
    manager = _written(tmp_path)
    path = Path(str(manager.get_session_file()))
    first = manager.get_entries()[0]["id"]
    line = {
        "type": "label",
        "id": "feedbeef",
        "parentId": manager.get_leaf_id(),
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
    line |= {"targetId": first, "label": "added behind our back"}
    with path.open("a") as handle:
        handle.write(json.dumps(line, separators=(",", ":")) + "\n")
    (pi,) = pi_reader.inspect([path])
    diff = differences(pi, reading_of(manager))
    assert {"leafId", "pathIds", "labels", "entryIds"} <= diff.keys()
    assert not differences(pi, reading_of_file(path))  # a fresh open of ours sees it, like Pi


def test_oracle_reports_a_file_pi_refuses(pi_reader: PiReader, tmp_path: Path) -> None:
    path = tmp_path / "not-a-session.jsonl"
    path.write_text('{"type":"message","id":"x","parentId":null}\n')
    (pi,) = pi_reader.inspect([path])
    assert "not a valid pi session" in pi["error"]
    assert pi["sha256Before"] == pi["sha256After"]


def test_oracle_answers_many_files_in_one_request_in_order(pi_reader: PiReader, tmp_path: Path) -> None:
    paths = []
    for index in range(5):
        directory = tmp_path / str(index)
        directory.mkdir()
        paths.append(Path(str(_written(directory).get_session_file())))
    readings = pi_reader.inspect(paths)
    assert [reading["file"] for reading in readings] == [str(p.resolve()) for p in paths]
    assert len({reading["sessionId"] for reading in readings}) == 5


def test_unreachable_registry_makes_the_oracle_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    monkeypatch.setenv("RPCD_PI_ORACLE_DIR", str(tmp_path / "oracle"))
    # A closed loopback port and an empty cache: npm cannot reach anything.
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    with pytest.raises(OracleUnavailable, match="unreachable"):
        ensure_oracle(timeout=120)
    assert not (tmp_path / "oracle" / "oracle-stamp.json").exists()


def test_missing_npm_makes_the_oracle_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RPCD_PI_ORACLE_DIR", str(tmp_path / "oracle"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(OracleUnavailable, match="npm is not on PATH"):
        ensure_oracle(timeout=30)
