"""The host's key paths against the real runtime (``rpcd.runtime``): real session files in
temporary directories, the offline faux provider, failures injected through an extension,
a file standing where the host journal's directory should be, and a factory that refuses a
poisoned cwd."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import attrs
import pytest

from rpcd.core.errors import (
    FactoryError,
    HostDisposedError,
    HostUnavailableError,
    InvalidEntryError,
    MissingSessionCwdError,
    SessionFileNotFoundError,
)
from rpcd.core.values import Diagnostic, ExtensionBindings, ExtensionError
from rpcd.daemon.journal import HostJournal, HostJournalError
from rpcd.host.failures import (
    Phase,
    context_of,
)
from rpcd.host.host import SerializedHost
from rpcd.host.port import Binding, HostSubscription, SessionPort
from rpcd.providers.base import ProviderRegistry
from rpcd.providers.faux import FauxProvider
from rpcd.runtime.factory import make_default_factory
from rpcd.runtime.runtime import AgentSessionRuntime, CreateRuntimeResult, RuntimeFactory, create_runtime
from rpcd.runtime.services import ProcessInputs, ProjectTrustContext, TrustDecision
from rpcd.store import SessionManager
from tests.host import _ext_sink as sink

pytestmark = pytest.mark.anyio

PROBE_EXTENSION = """
from tests.host import _ext_sink as sink


def register(pi):
    def make(kind):
        async def handler(event, ctx):
            sink.SEEN.append((kind, ctx.cwd))
            hold = sink.HOLD.pop(kind, None)
            if hold is not None:
                reached, release = hold
                reached.set()
                await release.wait()
            if kind in sink.RAISE:
                raise RuntimeError("extension handler failed on purpose")
            if sink.CANCEL.get(kind):
                return {"cancel": True}
            return None
        return handler

    for kind in ("session_start", "session_shutdown", "session_before_switch", "session_before_fork"):
        pi.on(kind, make(kind))
"""


@pytest.fixture(autouse=True)
def _clean_sink() -> Iterator[None]:
    sink.reset()
    yield
    sink.reset()


async def _trust(cwd: str, context: ProjectTrustContext) -> TrustDecision:
    return TrustDecision("trust")


class PoisonableFactory:
    """The real default factory, refusing any cwd in ``poisoned`` (before building anything)."""

    def __init__(self, inner: RuntimeFactory) -> None:
        self.inner = inner
        self.poisoned: set[str] = set()

    async def __call__(
        self,
        *,
        cwd: str,
        agent_dir: str,
        session_manager: SessionManager,
        session_start_event: Mapping[str, Any] | None,
    ) -> CreateRuntimeResult:
        if cwd in self.poisoned:
            raise FactoryError(f"refusing to build services for {cwd}", cwd=cwd)
        return await self.inner(
            cwd=cwd,
            agent_dir=agent_dir,
            session_manager=session_manager,
            session_start_event=session_start_event,
        )


@attrs.define
class ComposedBindings:
    """What a composition root binds: events per session, diagnostics, extension errors, the journal."""

    runtime: AgentSessionRuntime
    journal: HostJournal
    events: list[tuple[str, str]] = attrs.field(factory=list)
    reported: list[Sequence[Diagnostic]] = attrs.field(factory=list)
    extension_errors: list[ExtensionError] = attrs.field(factory=list)
    fail_subscribe: bool = False
    fail_unsubscribe: bool = False

    def extension_bindings(self, session: SessionPort) -> ExtensionBindings:
        return ExtensionBindings(mode="rpc", on_error=self.extension_errors.append)

    def subscribe(self, binding: Binding) -> HostSubscription:
        session = binding.session
        if self.fail_subscribe:
            raise RuntimeError("subscribe failed on purpose")  # atomic: nothing installed
        session_id = session.session_id
        release = session.subscribe(lambda event: self.events.append((session_id, str(event["type"]))))

        def unsubscribe(reason: str) -> None:
            if self.fail_unsubscribe:
                raise RuntimeError("unsubscribe failed on purpose")
            release()

        return unsubscribe

    def report_diagnostics(self, binding: Binding, diagnostics: Sequence[Diagnostic]) -> None:
        self.reported.append(diagnostics)

    async def flush_persistence(self, current: SessionPort | None) -> None:
        await self.journal.write_async(self.runtime.session.session_file, self.runtime.cwd)


@attrs.define
class World:
    root: Path
    agent_dir: Path
    alpha: Path
    beta: Path
    factory: PoisonableFactory
    bindings: ComposedBindings
    host: SerializedHost
    runtime: AgentSessionRuntime


def _project(root: Path, name: str) -> Path:
    project = root / name
    project.mkdir()
    return project


def exists(path: str) -> bool:
    return Path(path).exists()


def persisted_session(cwd: Path, agent_dir: Path, text: str = "hello") -> str:
    """A session file of ``cwd`` written through the store (user + assistant, so it is on disk)."""
    sm = SessionManager.create(str(cwd), agent_dir=str(agent_dir))
    sm.append_model_change("faux", "faux-1")
    sm.append_thinking_level_change("off")
    sm.append_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    sm.append_message({
        "role": "assistant", "content": [{"type": "text", "text": "hi"}], "api": "faux", "provider": "faux",
        "model": "faux-1", "usage": {**zero, "totalTokens": 0, "cost": {**zero, "total": 0}},
        "stopReason": "stop", "timestamp": 2,
    })
    path = sm.get_session_file()
    assert path is not None and Path(path).exists()
    return path


async def build_world(
    task_group: anyio.abc.TaskGroup,
    tmp_path: Path,
    *,
    journal_path: Path | None = None,
    projects: tuple[Path, Path] | None = None,
    agent_dir: Path | None = None,
) -> World:
    agent_dir = agent_dir or tmp_path / "agent"
    (agent_dir / "extensions").mkdir(parents=True)
    (agent_dir / "extensions" / "hostprobe.py").write_text(textwrap.dedent(PROBE_EXTENSION))
    alpha, beta = projects or (_project(tmp_path, "alpha"), _project(tmp_path, "beta"))
    inner = make_default_factory(
        ProcessInputs(), authorize_project=_trust, provider_registry=ProviderRegistry([FauxProvider()])
    )
    factory = PoisonableFactory(inner)
    sm = SessionManager.create(str(alpha), agent_dir=str(agent_dir))
    runtime = await create_runtime(factory, cwd=str(alpha), agent_dir=str(agent_dir), session_manager=sm)
    journal = HostJournal(journal_path or tmp_path / "state" / "host.json")
    bindings = ComposedBindings(runtime, journal)
    host = await SerializedHost.bind(runtime, bindings, task_group=task_group)
    return World(tmp_path, agent_dir, alpha, beta, factory, bindings, host, runtime)


async def test_real_replacements_switch_cwd_report_diagnostics_once_and_journal_the_current_session(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path,
) -> None:
    w = await build_world(host_task_group, tmp_path)
    host = w.host
    assert host.cwd == str(w.alpha) and len(w.bindings.reported) == 1
    assert await host.prompt("first question") == "stop"
    alpha_file = host.session_file
    assert alpha_file is not None and exists(alpha_file)
    beta_file = persisted_session(w.beta, w.agent_dir)

    resumed = await host.resume(beta_file)
    assert (resumed.cwd, resumed.session_file, resumed.generation) == (str(w.beta), beta_file, 1)
    assert host.cwd == str(w.beta) and len(w.bindings.reported) == 2
    assert list(w.bindings.reported[-1]) == list(w.runtime.diagnostics)
    record = w.bindings.journal.read()
    assert record is not None and (record.session_file, record.cwd) == (beta_file, str(w.beta))

    entries = host.probe("getTree", lambda session: session.tree()).entries
    user_entry = next(e for e in entries if e.get("type") == "message")
    forked = await host.fork(str(user_entry["id"]))
    assert forked.selected_text == "hello" and forked.generation == 2 and forked.cwd == str(w.beta)

    back = await host.resume(alpha_file)
    leaf = host.state().leaf_id
    cloned = await host.clone()
    assert cloned.cwd == str(w.alpha) and cloned.session_file != alpha_file
    assert SessionManager.open(str(cloned.session_file)).get_leaf_id() == leaf
    assert back.generation + 1 == cloned.generation == host.generation == 4

    imported = await host.import_jsonl(beta_file)
    assert imported.cwd == str(w.beta) and imported.session_file != beta_file
    assert len(w.bindings.reported) == 6  # startup + five replacements, once each
    record = w.bindings.journal.read()
    assert record is not None and record.session_file == imported.session_file
    starts = [cwd for kind, cwd in sink.SEEN if kind == "session_start"]
    assert starts == [str(w.alpha), str(w.beta), str(w.beta), str(w.alpha), str(w.alpha), str(w.beta)]
    await host.dispose()
    assert host.status == "disposed"
    assert sink.SEEN[-1] == ("session_shutdown", str(w.beta))


async def test_real_pre_validation_failures_keep_the_session_usable(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path
) -> None:
    w = await build_world(host_task_group, tmp_path)
    host = w.host
    await host.prompt("something")
    session_before = host.session_id
    gone = tmp_path / "gone"
    gone.mkdir()
    orphan = persisted_session(gone, w.agent_dir)
    gone.rmdir()
    with pytest.raises(MissingSessionCwdError) as missing:
        await host.resume(orphan)
    with pytest.raises(InvalidEntryError) as invalid:
        await host.fork("deadbeef")
    with pytest.raises(SessionFileNotFoundError):
        await host.import_jsonl(str(tmp_path / "nowhere.jsonl"))
    for info in (missing, invalid):
        context = context_of(info.value)
        assert context is not None and context.phase == Phase.PRE_VALIDATION and not context.terminal
    assert host.status == "ready" and host.session_id == session_before
    assert await host.prompt("still here") == "stop"


async def test_real_extension_cancelling_the_switch_keeps_the_old_session(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path
) -> None:
    w = await build_world(host_task_group, tmp_path)
    host = w.host
    sink.CANCEL["session_before_switch"] = True
    outcome = await host.new_session()
    assert outcome.cancelled and outcome.session_id == host.session_id and outcome.generation == 0
    assert host.status == "ready" and len(w.bindings.reported) == 1
    assert not any(kind == "session_shutdown" for kind, _ in sink.SEEN)


async def test_real_extension_handler_failure_is_reported_not_fatal(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path
) -> None:
    w = await build_world(host_task_group, tmp_path)
    sink.RAISE.add("session_start")
    outcome = await w.host.new_session()
    assert not outcome.cancelled and w.host.status == "ready"
    assert [(e.event, "hostprobe" in e.extension_path) for e in w.bindings.extension_errors] == [
        ("session_start", True)
    ]


async def test_real_factory_refusing_a_poisoned_cwd_leaves_the_host_terminal_with_no_session(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path,
) -> None:
    w = await build_world(host_task_group, tmp_path)
    host = w.host
    beta_file = persisted_session(w.beta, w.agent_dir)
    w.factory.poisoned.add(str(w.beta))
    with pytest.raises(FactoryError) as info:
        await host.resume(beta_file)
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.REPLACEMENT and context.terminal
    assert context.session_path == beta_file
    assert host.status == "unusable"
    with pytest.raises(HostUnavailableError):
        host.cwd  # noqa: B018
    with pytest.raises(HostUnavailableError):
        await host.prompt("is anyone there")
    with pytest.raises(HostUnavailableError):
        await host.new_session()
    assert ("session_shutdown", str(w.alpha)) in sink.SEEN  # the old session was torn down
    await host.dispose()  # still cleans up (Pi tolerates disposing the old session again)


async def test_real_journal_directory_blocked_by_a_file_makes_the_replacement_terminal(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path
) -> None:
    blocker = tmp_path / "state-blocker"
    w = await build_world(host_task_group, tmp_path, journal_path=blocker / "rpcd" / "host.json")
    blocker.write_text("a file where the journal directory should be")
    host = w.host
    with pytest.raises(HostJournalError) as info:
        await host.new_session()
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.PERSISTENCE and context.terminal
    assert "is not a directory" in str(info.value)
    assert host.status == "unusable"
    assert w.runtime.session.extension_runner is None or w.runtime.session.extension_runner.is_invalidated
    with pytest.raises(HostUnavailableError):
        await host.resume(persisted_session(w.beta, w.agent_dir))
    # final disposal still attempts every step; the journal flush fails again and is reported
    with pytest.raises(HostJournalError) as final:
        await host.dispose()
    final_context = context_of(final.value)
    assert final_context is not None and final_context.phase == Phase.FINAL_DISPOSAL and final_context.terminal
    assert host.status == "disposed"


PROJECT_EXTENSION = """
from tests.host import _ext_sink as sink


def register(pi):
    def on_start(event, ctx):
        sink.SEEN.append(("project-extension:" + NAME, ctx.cwd))

    pi.on("session_start", on_start)
"""


def _project_resources(project: Path) -> None:
    """``.pi/settings.json`` naming a *relative* extension path, and that extension: both must
    be read from this project only when a session of this project is current (seed §4, §10)."""
    config = project / ".pi"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"marker": project.name, "extensions": ["probe.py"]}))
    (config / "probe.py").write_text(f"NAME = {project.name!r}\n" + textwrap.dedent(PROJECT_EXTENSION))


async def test_real_project_settings_and_relative_extensions_come_from_the_selected_cwd(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path
) -> None:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    alpha, beta = _project(tmp_path, "alpha"), _project(tmp_path, "beta")
    _project_resources(alpha)
    _project_resources(beta)
    beta_file = persisted_session(beta, agent_dir)
    w = await build_world(host_task_group, tmp_path, projects=(alpha, beta), agent_dir=agent_dir)
    host = w.host
    assert w.runtime.services.settings.get("marker") == "alpha"
    await host.resume(beta_file)
    assert host.cwd == str(beta) and w.runtime.services.settings.get("marker") == "beta"
    await host.new_session()
    assert host.cwd == str(beta) and w.runtime.services.settings.get("marker") == "beta"
    starts = [entry for entry in sink.SEEN if entry[0].startswith("project-extension:")]
    assert starts == [
        ("project-extension:alpha", str(alpha)),
        ("project-extension:beta", str(beta)),
        ("project-extension:beta", str(beta)),
    ]


async def test_real_dispose_during_a_slow_healthy_replacement_waits_and_cleans_the_new_session(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path,
) -> None:
    w = await build_world(host_task_group, tmp_path)
    host = w.host
    beta_file = persisted_session(w.beta, w.agent_dir)
    reached, release = anyio.Event(), anyio.Event()
    sink.HOLD["session_start"] = (reached, release)  # the replacement's extension binding is slow
    outcome: dict[str, Any] = {}

    async def replace() -> None:
        outcome["replace"] = await host.resume(beta_file)

    async def queued() -> None:
        with pytest.raises(HostDisposedError):
            await host.new_session()
        outcome["later"] = "refused"

    async with anyio.create_task_group() as tg:
        tg.start_soon(replace)
        await reached.wait()
        try:
            tg.start_soon(host.dispose)
            await anyio.wait_all_tasks_blocked()
            assert host.status == "disposed"  # terminal at once, while the replacement owns the lock
            with pytest.raises(HostDisposedError):
                host.cwd  # noqa: B018
            tg.start_soon(queued)  # a later call meets the terminal guard
            await anyio.wait_all_tasks_blocked()
            assert ("session_shutdown", str(w.beta)) not in sink.SEEN  # cleanup waits behind the tail
        finally:
            release.set()
    assert outcome["replace"].session_file == beta_file and outcome["replace"].cwd == str(w.beta)
    assert outcome["later"] == "refused"
    assert sink.SEEN[-2:] == [("session_start", str(w.beta)), ("session_shutdown", str(w.beta))]
    assert w.runtime.session.extension_runner is None or w.runtime.session.extension_runner.is_invalidated
    record = w.bindings.journal.read()
    assert record is not None and record.session_file == beta_file
    with pytest.raises(HostDisposedError):
        await host.dispose()


async def test_real_host_subscribe_failure_after_apply_disposes_the_applied_replacement(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path
) -> None:
    w = await build_world(host_task_group, tmp_path)
    host = w.host
    journal_before = w.bindings.journal.read()
    w.bindings.fail_subscribe = True
    with pytest.raises(RuntimeError, match="subscribe failed on purpose") as info:
        await host.new_session()
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.BINDING and context.terminal
    assert host.status == "unusable"
    # extensions of the replacement were bound (session_start), then it was shut down and disposed
    assert sink.SEEN[-2:] == [("session_start", str(w.alpha)), ("session_shutdown", str(w.alpha))]
    runner = w.runtime.session.extension_runner
    assert runner is None or runner.is_invalidated
    assert w.bindings.journal.read() == journal_before  # an unpublished replacement is never journaled
    with pytest.raises(HostUnavailableError):
        await host.prompt("anyone?")


async def test_real_old_unsubscribe_failure_lets_the_factory_run_then_disposes_the_replacement(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path,
) -> None:
    w = await build_world(host_task_group, tmp_path)
    host = w.host
    beta_file = persisted_session(w.beta, w.agent_dir)
    w.bindings.fail_unsubscribe = True
    with pytest.raises(RuntimeError, match="unsubscribe failed on purpose") as info:
        await host.resume(beta_file)
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.INVALIDATION_CLEANUP and context.terminal
    assert context.session_path == beta_file
    # the factory built the beta session (its services exist), but it was never bound nor published
    assert w.runtime.cwd == str(w.beta)
    assert ("session_start", str(w.beta)) not in sink.SEEN
    assert host.status == "unusable"


async def test_real_new_session_in_another_project_is_journaled_and_a_bad_cwd_changes_nothing(
    host_task_group: anyio.abc.TaskGroup, tmp_path: Path,
) -> None:
    w = await build_world(host_task_group, tmp_path)
    host = w.host
    await host.prompt("in alpha")
    session_before = host.session_id
    with pytest.raises(MissingSessionCwdError) as missing:
        await host.new_session(cwd=str(tmp_path / "no-such-project"))
    context = context_of(missing.value)
    assert context is not None and context.phase == Phase.PRE_VALIDATION and not context.terminal
    assert context.cwd == str(tmp_path / "no-such-project")
    assert host.status == "ready" and host.session_id == session_before and host.generation == 0
    outcome = await host.new_session(cwd=str(w.beta))
    assert (outcome.cwd, outcome.generation) == (str(w.beta), 1) and outcome.session_id != session_before
    assert host.cwd == str(w.beta)
    record = w.bindings.journal.read()
    assert record is not None and (record.session_file, record.cwd) == (outcome.session_file, str(w.beta))
    starts = [cwd for kind, cwd in sink.SEEN if kind == "session_start"]
    assert starts == [str(w.alpha), str(w.beta)]
