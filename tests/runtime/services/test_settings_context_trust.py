"""Settings merge, context-file order and the trust store, on real files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rpcd.runtime.resources.context_files import load_context_files
from rpcd.runtime.resources.settings import deep_merge, load_settings, merge_settings
from rpcd.runtime.resources.trust import TrustStore, trust_requiring_resources

from ._projects import write, write_json


def test_project_settings_deep_merge_over_global(tmp_path: Path) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "p"
    write_json(agent / "settings.json", {"theme": "dark", "compaction": {"enabled": True, "reserveTokens": 16384},
                                         "enabledModels": ["a", "b"]})
    write_json(cwd / ".pi" / "settings.json", {"compaction": {"reserveTokens": 8192}, "enabledModels": ["c"]})

    settings = load_settings(str(cwd), str(agent), project_trusted=True)

    assert settings.effective == {
        "theme": "dark",
        "compaction": {"enabled": True, "reserveTokens": 8192},
        "enabledModels": ["c"],
    }
    assert settings.get("compaction.enabled") is True
    assert settings.get("compaction.missing", 5) == 5
    assert settings.diagnostics == []


def test_untrusted_project_settings_are_not_read(tmp_path: Path) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "p"
    write(cwd / ".pi" / "settings.json", "{not json")
    settings = load_settings(str(cwd), str(agent), project_trusted=False)
    assert settings.project_settings == {} and settings.errors == ()


def test_default_tools_modifiers_edit_the_inherited_list() -> None:
    assert merge_settings({"defaultTools": ["read", "bash"]}, {"defaultTools": ["+grep", "-bash"]})[
        "defaultTools"
    ] == ["read", "grep"]
    # No global list: modifiers apply to Pi's built-in defaults.
    assert merge_settings({}, {"defaultTools": ["-write", "+ls"]})["defaultTools"] == ["read", "bash", "edit", "ls"]
    # A plain project list replaces.
    assert merge_settings({"defaultTools": ["read"]}, {"defaultTools": ["ls", "find"]})["defaultTools"] == [
        "ls",
        "find",
    ]
    assert merge_settings({"defaultTools": ["read"]}, {"defaultTools": []})["defaultTools"] == []


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (None, None),
        ([], []),
        (["+grep"], ["read", "bash", "edit", "write", "grep"]),
        (["ls", "-read"], ["ls"]),
        (["read", "ls", "-ls", "+find"], ["read", "find"]),
    ],
)
def test_default_tools_resolve_plain_names_and_modifiers(
    tmp_path: Path, entries: list[str] | None, expected: list[str] | None
) -> None:
    if entries is not None:
        write_json(tmp_path / "agent" / "settings.json", {"defaultTools": entries})
    settings = load_settings(str(tmp_path), str(tmp_path / "agent"), project_trusted=False)
    assert settings.default_tools() == expected


def test_bom_is_stripped_and_old_keys_migrated(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"queueMode": "all"}).encode())
    settings = load_settings(str(tmp_path), str(agent), project_trusted=True)
    assert settings.global_settings == {"steeringMode": "all"}


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"{\n  \"a\": 1,,\n}", "invalid JSON at line 2"), (b"[1, 2]", "not an object"), (b"\xff\xfe", "UTF-8")],
)
def test_broken_settings_file_becomes_a_diagnostic_without_its_content(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_bytes(content)
    write_json(tmp_path / ".pi" / "settings.json", {"theme": "p"})

    settings = load_settings(str(tmp_path), str(agent), project_trusted=True)

    assert settings.effective == {"theme": "p"}
    (diagnostic,) = settings.diagnostics
    assert diagnostic.type == "warning"
    assert str(agent / "settings.json") in diagnostic.message and reason in diagnostic.message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=2), json_values, max_size=4)


@given(json_objects, json_objects)
def test_deep_merge_keeps_every_override_leaf_and_untouched_base_keys(base: dict, override: dict) -> None:
    merged = deep_merge(base, override)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            assert merged[key] == deep_merge(base[key], value)
        else:
            assert merged[key] == value
    for key in base.keys() - override.keys():
        assert merged[key] == base[key]


def test_context_files_global_first_then_root_to_cwd(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    write(agent / "AGENTS.md", "global")
    write(tmp_path / "CLAUDE.md", "top")
    write(tmp_path / "a" / "AGENTS.md", "a-agents")
    write(tmp_path / "a" / "CLAUDE.md", "a-claude (shadowed)")
    write(tmp_path / "a" / "b" / "AGENTS.override.md", "b-override")
    write(tmp_path / "a" / "b" / "AGENTS.md", "b-agents (shadowed)")
    (tmp_path / "a" / "b" / "c").mkdir()

    files, diagnostics = load_context_files(str(tmp_path / "a" / "b" / "c"), str(agent))

    assert [f.content for f in files] == ["global", "top", "a-agents", "b-override"]
    assert files[0].path == str(agent / "AGENTS.md")
    assert diagnostics == []


def test_context_file_reached_twice_is_listed_once(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "once")
    files, _ = load_context_files(str(tmp_path), str(tmp_path))
    assert [f.content for f in files] == ["once"]


def test_trust_json_nearest_ancestor_decision_wins(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    org = tmp_path / "org"
    (org / "vendored" / "lib").mkdir(parents=True)
    (org / "app").mkdir()
    store = TrustStore(str(agent))
    store.set(str(org), True)
    store.set(str(org / "vendored"), False)

    assert store.lookup(str(org / "app")) is True
    assert store.lookup(str(org / "vendored" / "lib")) is False
    assert store.lookup(str(org)) is True
    assert store.lookup(str(tmp_path)) is None

    store.set(str(org / "vendored"), None)
    assert store.lookup(str(org / "vendored" / "lib")) is True
    text = (agent / "trust.json").read_text()
    assert json.loads(text) == {os.path.realpath(org): True}


def test_trust_lookup_uses_canonical_paths_through_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    store = TrustStore(str(tmp_path / "agent"))
    store.set(str(tmp_path / "link"), True)
    assert store.lookup(str(real)) is True


def test_unreadable_trust_json_means_no_decisions(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    write(agent / "trust.json", "{oops")
    store = TrustStore(str(agent))
    decisions, error = store.read()
    assert decisions == {} and error is not None and "invalid JSON" in error


def test_trust_requiring_resources_follow_pis_list(tmp_path: Path) -> None:
    project = tmp_path / "home" / "dev" / "p"
    (project / ".pi").mkdir(parents=True)
    home = tmp_path / "home"
    assert trust_requiring_resources(str(project), home=str(home)) == ()

    (home / ".agents" / "skills").mkdir(parents=True)  # the user's own skills never count
    assert trust_requiring_resources(str(project), home=str(home)) == ()

    (tmp_path / "home" / "dev" / ".agents" / "skills").mkdir(parents=True)
    assert trust_requiring_resources(str(project), home=str(home)) == (
        str(tmp_path / "home" / "dev" / ".agents" / "skills"),
    )
    write(project / ".pi" / "SYSTEM.md", "x")
    (project / ".pi" / "prompts").mkdir()
    assert trust_requiring_resources(str(project), home=str(home))[:2] == (".pi/prompts", ".pi/SYSTEM.md")
