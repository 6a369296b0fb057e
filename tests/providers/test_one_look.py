"""``credentials.one_look``: a session's model selection looks at auth.json and the environment once,
and decides what a selection without it decides; a login between two looks is seen by the next."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import rpcd.providers.authfile as authfile
from rpcd.providers import default_registry
from rpcd.providers.credentials import one_look
from rpcd.providers.model_selection import ModelInputs, Selection, select_session_model
from rpcd.runtime.factory import refresh_providers


def _select(agent_dir: str) -> Selection:
    registry = default_registry()
    refresh_providers(registry, agent_dir, env=None)
    return select_session_model(registry=registry, settings={}, inputs=ModelInputs(), has_existing=False,
                                stored_model=None, stored_thinking=None, has_thinking_entry=False)


def _picked(selection: Selection) -> tuple[str | None, str | None, str]:
    model = selection.model
    return (model.provider if model else None, model.id if model else None, selection.thinking_level)


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [n for n in os.environ if n.endswith(("_API_KEY", "_TOKEN"))]:
        monkeypatch.delenv(name)
    (tmp_path / "agent").mkdir()
    return tmp_path / "agent"


def test_auth_json_is_looked_at_once_per_selection(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    looked: list[str] = []
    real = authfile.revision

    def counting(path: str) -> object:
        looked.append(path)
        return real(path)

    monkeypatch.setattr(authfile, "revision", counting)
    _select(str(agent_dir))
    without = len(looked)
    looked.clear()
    with one_look():
        _select(str(agent_dir))
    auth = str(agent_dir / "auth.json")
    assert looked.count(auth) == 1 and without > 10 * looked.count(auth)


def test_a_selection_in_one_look_decides_what_one_without_decides(agent_dir: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for setup in ("none", "env", "auth"):
        if setup == "env":
            monkeypatch.setenv("OPENAI_API_KEY", "sk-test-env")
        if setup == "auth":
            monkeypatch.delenv("OPENAI_API_KEY")
            (agent_dir / "auth.json").write_text(json.dumps({"anthropic": {"type": "api_key", "key": "sk-ant"}}))
        plain = _select(str(agent_dir))
        with one_look():
            looked = _select(str(agent_dir))
        assert _picked(looked) == _picked(plain), setup
        assert looked.diagnostics == plain.diagnostics and looked.fallback_message == plain.fallback_message


def test_a_login_between_two_looks_is_seen_by_the_next(agent_dir: Path) -> None:
    with one_look():
        before = _picked(_select(str(agent_dir)))
    (agent_dir / "auth.json").write_text(json.dumps({"anthropic": {"type": "api_key", "key": "sk-ant"}}))
    with one_look():
        after = _picked(_select(str(agent_dir)))
    assert before[0] != "anthropic" and after[0] == "anthropic"
