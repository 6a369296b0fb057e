"""Services are rebuilt per cwd: each project sees only its own settings and resources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rpcd.runtime.resources.trust import canonical
from rpcd.runtime.services import ProcessInputs, ProjectTrustContext, TrustDecision, create_services

from ._projects import make_project, recording_extension, write, write_json

pytestmark = pytest.mark.anyio


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    path = tmp_path / "markers"
    path.mkdir()
    return path


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    path = tmp_path / "agent"
    write_json(path / "settings.json", {"theme": "global", "compaction": {"enabled": True, "reserveTokens": 100}})
    write(path / "AGENTS.md", "global instructions\n")
    return path


def trust_all(agent_dir: Path, *projects: Path) -> None:
    write_json(agent_dir / "trust.json", {canonical(str(p)): True for p in projects})


async def test_each_cwd_sees_only_its_own_settings_context_files_and_extensions(
    tmp_path: Path, agent_dir: Path, markers: Path
) -> None:
    alpha = make_project(tmp_path, "alpha", markers, settings={"theme": "alpha", "compaction": {"reserveTokens": 7}})
    beta = make_project(tmp_path, "beta", markers, settings={"theme": "beta"})
    trust_all(agent_dir, alpha, beta)

    for _ in range(2):  # back and forth: nothing accumulates between builds
        a = await create_services(str(alpha), str(agent_dir), process_inputs=ProcessInputs())
        b = await create_services(str(beta), str(agent_dir), process_inputs=ProcessInputs())

        assert a.settings.get("theme") == "alpha"
        assert a.settings.effective["compaction"] == {"enabled": True, "reserveTokens": 7}
        assert b.settings.get("theme") == "beta"
        assert b.settings.get("compaction.reserveTokens") == 100
        assert [f.content for f in a.context_files] == ["global instructions\n", "instructions of alpha\n"]
        assert [f.content for f in b.context_files] == ["global instructions\n", "instructions of beta\n"]
        assert sorted(a.extensions.tools) == ["who_alpha"]
        assert sorted(b.extensions.tools) == ["who_beta"]
        assert a.project_trusted and b.project_trusted
        assert a.diagnostics == [] and b.diagnostics == []
        ext_a, ext_b = a.extensions.extensions[0], b.extensions.extensions[0]
        assert ext_a.module_name != ext_b.module_name
        assert (await a.extensions.execute_tool("who_alpha", "c1", {}))["content"][0]["text"] == f"alpha:{alpha}"


async def test_startup_directory_resources_never_leak_into_another_cwd(
    tmp_path: Path, agent_dir: Path, markers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    startup = make_project(tmp_path, "startup", markers, settings={"theme": "startup", "defaultModel": "leak"})
    other = tmp_path / "other"
    other.mkdir()
    trust_all(agent_dir, startup, other)
    monkeypatch.chdir(startup)

    services = await create_services(str(other), str(agent_dir), process_inputs=ProcessInputs())

    assert services.cwd == str(other)
    assert services.settings.get("theme") == "global"
    assert services.settings.get("defaultModel") is None
    assert [f.path for f in services.context_files] == [str(agent_dir / "AGENTS.md")]
    assert services.extensions.extensions == []
    assert not (markers / "startup.imported").exists()


async def test_absolute_process_extension_path_keeps_its_meaning_in_every_cwd(
    tmp_path: Path, agent_dir: Path, markers: Path
) -> None:
    shared = write(tmp_path / "tools" / "shared.py", recording_extension(markers, "shared"))
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    # A same-named module in the cwd must not be picked up instead of the absolute one.
    write(two / "shared.py", "raise RuntimeError('wrong module')\n")
    inputs = ProcessInputs(extension_paths=(str(shared),))

    for cwd in (one, two, one):
        services = await create_services(str(cwd), str(agent_dir), process_inputs=inputs)
        assert [e.path for e in services.extensions.extensions] == [str(shared)]
        result = await services.extensions.execute_tool("who_shared", "c", {})
        assert result["content"][0]["text"] == f"shared:{cwd}"
        assert services.diagnostics == []


async def test_relative_process_extension_path_is_refused_not_reinterpreted(
    tmp_path: Path, agent_dir: Path, markers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "p"
    write(project / "rel.py", recording_extension(markers, "rel"))
    monkeypatch.chdir(project)

    services = await create_services(
        str(project), str(agent_dir), process_inputs=ProcessInputs(extension_paths=("rel.py",))
    )

    assert services.extensions.extensions == []
    assert not (markers / "rel.imported").exists()
    assert [d.type for d in services.diagnostics] == ["error"]
    assert services.diagnostics[0].message.startswith('Failed to load extension "rel.py"')


async def test_untrusted_project_executes_no_code_and_ignores_project_settings(
    tmp_path: Path, agent_dir: Path, markers: Path
) -> None:
    project = make_project(tmp_path, "evil", markers, settings={"theme": "evil"})
    write(project / ".pi" / "SYSTEM.md", "project system prompt")

    services = await create_services(str(project), str(agent_dir), process_inputs=ProcessInputs())

    assert not services.project_trusted
    assert not (markers / "evil.imported").exists()
    assert not (markers / "evil.registered").exists()
    assert services.extensions.extensions == []
    assert services.settings.project_settings == {}
    assert services.settings.get("theme") == "global"
    assert services.system_prompt is None
    # Context files are text, loaded regardless of trust (Pi's rule).
    assert [f.content for f in services.context_files][-1] == "instructions of evil\n"
    (warning,) = services.diagnostics
    assert warning.type == "warning"
    assert "not trusted" in warning.message and ".pi/extensions" in warning.message


async def test_untrusted_project_is_not_imported_even_when_its_settings_list_extensions(
    tmp_path: Path, agent_dir: Path, markers: Path
) -> None:
    project = tmp_path / "p"
    write(project / "lib" / "x.py", recording_extension(markers, "listed"))
    write_json(project / ".pi" / "settings.json", {"extensions": ["../lib/x.py"]})

    untrusted = await create_services(str(project), str(agent_dir), process_inputs=ProcessInputs())
    assert untrusted.extensions.extensions == []
    assert not (markers / "listed.imported").exists()

    trusted = await create_services(
        str(project), str(agent_dir), process_inputs=ProcessInputs(trust_override=True)
    )
    assert [e.path for e in trusted.extensions.extensions] == [str(project / "lib" / "x.py")]


async def test_project_without_trust_requiring_resources_is_never_asked(tmp_path: Path, agent_dir: Path) -> None:
    project = tmp_path / "plain"
    (project / ".pi").mkdir(parents=True)  # a bare .pi does not need trust
    write(project / "AGENTS.md", "hi")
    asked: list[str] = []

    async def authorize(cwd: str, context: ProjectTrustContext) -> TrustDecision:
        asked.append(cwd)
        return TrustDecision("deny")

    services = await create_services(
        str(project), str(agent_dir), process_inputs=ProcessInputs(), authorize_project=authorize
    )

    assert services.project_trusted
    assert asked == []
    assert services.diagnostics == []


async def test_authorize_project_decides_and_remember_writes_sorted_trust_json(
    tmp_path: Path, agent_dir: Path, markers: Path
) -> None:
    zeta = make_project(tmp_path, "zeta", markers)
    alpha = make_project(tmp_path, "alpha", markers)
    contexts: list[ProjectTrustContext] = []

    async def authorize(cwd: str, context: ProjectTrustContext) -> TrustDecision:
        contexts.append(context)
        return TrustDecision("trust", remember=True)

    for project in (zeta, alpha):
        services = await create_services(
            str(project), str(agent_dir), process_inputs=ProcessInputs(), authorize_project=authorize
        )
        assert services.project_trusted
        assert services.settings.project_settings != {}

    assert [c.cwd for c in contexts] == [str(zeta), str(alpha)]
    assert contexts[0].reasons == (".pi/settings.json", ".pi/extensions")
    stored_text = (agent_dir / "trust.json").read_text()
    stored = json.loads(stored_text)
    assert list(stored) == sorted(stored) == [canonical(str(alpha)), canonical(str(zeta))]
    assert all(v is True for v in stored.values())

    # Remembered: a later build does not ask again.
    await create_services(str(zeta), str(agent_dir), process_inputs=ProcessInputs(), authorize_project=authorize)
    assert len(contexts) == 2


async def test_trust_once_lasts_for_the_process_and_is_not_written(
    tmp_path: Path, agent_dir: Path, markers: Path
) -> None:
    project = make_project(tmp_path, "p", markers)
    calls: list[str] = []

    async def authorize(cwd: str, context: ProjectTrustContext) -> TrustDecision:
        calls.append(cwd)
        return TrustDecision("trustOnce", remember=True)

    inputs = ProcessInputs()
    for _ in range(2):
        services = await create_services(
            str(project), str(agent_dir), process_inputs=inputs, authorize_project=authorize
        )
        assert services.project_trusted
    assert calls == [str(project)]
    assert not (agent_dir / "trust.json").exists()


async def test_deny_keeps_project_code_unloaded(tmp_path: Path, agent_dir: Path, markers: Path) -> None:
    project = make_project(tmp_path, "p", markers)

    async def authorize(cwd: str, context: ProjectTrustContext) -> TrustDecision:
        return TrustDecision("deny", remember=True)

    services = await create_services(
        str(project), str(agent_dir), process_inputs=ProcessInputs(), authorize_project=authorize
    )

    assert not services.project_trusted
    assert not (markers / "p.imported").exists()
    assert json.loads((agent_dir / "trust.json").read_text()) == {canonical(str(project)): False}


async def test_authorize_failure_propagates_so_the_factory_rejects(
    tmp_path: Path, agent_dir: Path, markers: Path
) -> None:
    project = make_project(tmp_path, "p", markers)

    async def authorize(cwd: str, context: ProjectTrustContext) -> TrustDecision:
        raise ConnectionError("client went away")

    with pytest.raises(ConnectionError):
        await create_services(str(project), str(agent_dir), process_inputs=ProcessInputs(), authorize_project=authorize)
    assert not (markers / "p.imported").exists()


async def test_trust_override_and_default_project_trust_setting(
    tmp_path: Path, agent_dir: Path, markers: Path
) -> None:
    project = make_project(tmp_path, "p", markers)
    write_json(agent_dir / "trust.json", {canonical(str(project)): True})

    denied = await create_services(str(project), str(agent_dir), process_inputs=ProcessInputs(trust_override=False))
    assert not denied.project_trusted

    (agent_dir / "trust.json").unlink()
    write_json(agent_dir / "settings.json", {"defaultProjectTrust": "always"})
    always = await create_services(str(project), str(agent_dir), process_inputs=ProcessInputs())
    assert always.project_trusted and always.trust is not None and always.trust.source == "setting"

    # defaultProjectTrust is global-only: a project cannot vouch for itself.
    write_json(agent_dir / "settings.json", {})
    write_json(project / ".pi" / "settings.json", {"defaultProjectTrust": "always"})
    self_vouched = await create_services(str(project), str(agent_dir), process_inputs=ProcessInputs())
    assert not self_vouched.project_trusted


async def test_global_extension_answers_project_trust(tmp_path: Path, agent_dir: Path, markers: Path) -> None:
    project = make_project(tmp_path, "p", markers)
    write(
        agent_dir / "extensions" / "gate.py",
        """
        def register(pi):
            def broken(event, ctx):
                raise ValueError("boom")
            pi.on("project_trust", broken)
            pi.on("project_trust", lambda event, ctx: {"trusted": "undecided"})
            pi.on("project_trust", lambda event, ctx: {"trusted": "yes", "remember": True})
            pi.on("project_trust", lambda event, ctx: {"trusted": "no"})
        """,
    )

    services = await create_services(str(project), str(agent_dir), process_inputs=ProcessInputs())

    assert services.project_trusted
    assert services.trust is not None and services.trust.source == "extension"
    assert (markers / "p.registered").read_text() == str(project)
    assert json.loads((agent_dir / "trust.json").read_text()) == {canonical(str(project)): True}
    (warning,) = services.diagnostics
    assert warning.type == "warning" and "project_trust error: ValueError: boom" in warning.message


async def test_flags_resolve_against_registered_extension_flags(tmp_path: Path, agent_dir: Path) -> None:
    write(
        agent_dir / "extensions" / "flags.py",
        """
        def register(pi):
            pi.register_flag("verbose")
            pi.register_flag("name", type="string", default="anon")
            pi.register_flag("level", type="string")
        """,
    )
    cwd = tmp_path / "w"
    cwd.mkdir()

    services = await create_services(
        str(cwd),
        str(agent_dir),
        process_inputs=ProcessInputs(flags={"verbose": "yes", "level": True, "nope": True, "nada": "x"}),
    )

    # Pi: a boolean flag is set by presence; a string flag without a string value keeps its default.
    assert services.extensions.flag_values() == {"verbose": True, "name": "anon"}
    assert [d.message for d in services.diagnostics] == [
        'Extension flag "--level" requires a value',
        "Unknown options: --nope, --nada",
    ]

    one_unknown = await create_services(str(cwd), str(agent_dir), process_inputs=ProcessInputs(flags={"x": True}))
    assert [d.message for d in one_unknown.diagnostics] == ["Unknown option: --x"]


async def test_no_context_files_loads_none(tmp_path: Path, agent_dir: Path) -> None:
    cwd = tmp_path / "w"
    write(cwd / "AGENTS.md", "x")
    services = await create_services(
        str(cwd), str(agent_dir), process_inputs=ProcessInputs(no_context_files=True)
    )
    assert services.context_files == []


async def test_unreadable_trust_json_is_never_clobbered_by_a_remembered_decision(
    tmp_path: Path, agent_dir: Path, markers: Path
) -> None:
    project = make_project(tmp_path, "p", markers)
    write(agent_dir / "trust.json", '{"/somewhere": true,')

    async def authorize(cwd: str, context: ProjectTrustContext) -> TrustDecision:
        return TrustDecision("trust", remember=True)

    inputs = ProcessInputs()
    services = await create_services(str(project), str(agent_dir), process_inputs=inputs, authorize_project=authorize)

    assert services.project_trusted
    assert (agent_dir / "trust.json").read_text() == '{"/somewhere": true,'
    messages = [d.message for d in services.diagnostics]
    assert any("Ignoring trust store" in m for m in messages)
    assert any("decision not saved" in m for m in messages)
    # Still remembered for this process, so the client is not asked again.
    again = await create_services(str(project), str(agent_dir), process_inputs=inputs)
    assert again.project_trusted and again.trust is not None and again.trust.source == "session"


async def test_unlistable_extensions_directory_does_not_make_services_raise(tmp_path: Path, agent_dir: Path) -> None:
    # a symlink loop fails os.listdir with ELOOP even for root (chmod 000 would not)
    loop = agent_dir / "extensions"
    loop.symlink_to(loop)
    cwd = tmp_path / "w"
    cwd.mkdir()
    services = await create_services(str(cwd), str(agent_dir), process_inputs=ProcessInputs())
    assert services.extensions.extensions == []
