"""Files written by our RUNTIME (prompt turns with the faux provider, a tool round trip, a name,
a fork through ``AgentSessionRuntime.fork``) open in real Pi 0.85.0 as they do in our store."""

from __future__ import annotations

from pathlib import Path

import pytest

from rpcd.core.values import ExtensionBindings
from rpcd.providers.base import ProviderRegistry
from rpcd.providers.faux import FauxProvider
from rpcd.runtime.factory import make_default_factory
from rpcd.runtime.runtime import AgentSessionRuntime, create_runtime
from rpcd.runtime.services import ProcessInputs, ProjectTrustContext, TrustDecision
from rpcd.store import SessionManager
from tests.pi_compat.oracle import PiReader
from tests.pi_compat.reading import assert_pi_reads_as_we_do, reading_of_file, sha256_of

pytestmark = [pytest.mark.anyio, pytest.mark.node]


async def _trust(cwd: str, context: ProjectTrustContext) -> TrustDecision:
    return TrustDecision("trust")


async def _runtime(project: Path, agent_dir: Path, faux: FauxProvider) -> AgentSessionRuntime:
    factory = make_default_factory(
        ProcessInputs(), authorize_project=_trust, provider_registry=ProviderRegistry([faux])
    )
    manager = SessionManager.create(str(project), agent_dir=str(agent_dir))
    runtime = await create_runtime(factory, cwd=str(project), agent_dir=str(agent_dir), session_manager=manager)
    await runtime.session.bind_extensions(ExtensionBindings())
    return runtime


async def test_pi_reads_files_written_by_prompt_turns_and_a_runtime_fork(
    pi_reader: PiReader, tmp_path: Path, agent_dir: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    faux = FauxProvider(
        [
            {"thinking": "Greeting back.", "text": "Hello!"},
            {"toolCall": {"name": "no_such_tool", "arguments": {"x": 1}, "id": "call-1"}},
            {"text": "The tool was not there."},
            {"text": "Forked reply."},
        ]
    )
    runtime = await _runtime(project, agent_dir, faux)
    try:
        await runtime.session.prompt("Hi")
        await runtime.session.prompt("Use a tool, please.")
        runtime.session.set_session_name("Runtime session")
        first_file = Path(str(runtime.session.session_file))
        entries = list(runtime.session.tree().entries)
        second_user = [e["id"] for e in entries if e["type"] == "message" and e["message"]["role"] == "user"][1]

        await runtime.fork(second_user, "before")
        await runtime.session.prompt("A different second question.")
        forked_file = Path(str(runtime.session.session_file))
    finally:
        await runtime.dispose()

    assert forked_file != first_file
    digests = {path: sha256_of(path) for path in (first_file, forked_file)}
    readings = pi_reader.inspect([first_file, forked_file])
    for path, pi in zip((first_file, forked_file), readings, strict=True):
        assert_pi_reads_as_we_do(pi, reading_of_file(path), path)
        assert pi["sha256Before"] == digests[path] == sha256_of(path)
    first, forked = readings
    assert first["sessionName"] == "Runtime session"
    assert "toolResult" in first["context"]["roles"]
    assert forked["header"]["parentSession"] == str(first_file)


async def test_session_name_with_crlf_is_stored_as_pi_stores_it(
    pi_reader: PiReader, tmp_path: Path, agent_dir: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    runtime = await _runtime(project, agent_dir, FauxProvider([{"text": "ok"}]))
    try:
        await runtime.session.prompt("Hi")
        runtime.session.set_session_name("Runtime\r\nsession")
        path = Path(str(runtime.session.session_file))
    finally:
        await runtime.dispose()
    (pi,) = pi_reader.inspect([path])
    assert pi["sessionName"] == "Runtime session"
