"""Real projects on disk, a tracer extension, a tracing factory and host callbacks that
record the same trace lines Pi 0.85.0's probe recorded (``runtime-trace.json``), plus
a normalizer so both traces compare exactly (paths become symbols by first use)."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rpcd.core.values import ExtensionBindings
from rpcd.providers.base import ProviderRegistry
from rpcd.providers.faux import FauxProvider
from rpcd.runtime.factory import make_default_factory
from rpcd.runtime.runtime import AgentSessionRuntime, CreateRuntimeResult, RuntimeFactory, create_runtime
from rpcd.runtime.services import ProcessInputs, ProjectTrustContext, TrustDecision
from rpcd.store import SessionManager

from . import _trace_sink as sink

PI_TRACE_FILE = Path("/work/shared/fixtures/pi-0.85.0/runtime-trace.json")
PI_FIXTURE_SESSIONS = Path("/work/shared/fixtures/pi-0.85.0/sessions")

ENTRY_ID = re.compile(r"[0-9a-f]{8}")
TRACER_SOURCE = """
import json
from tests.runtime import _trace_sink as sink


def register(pi):
    sink.EXT_COUNT[0] += 1
    n = sink.EXT_COUNT[0]

    def make(kind):
        def handler(event, ctx):
            payload = {k: v for k, v in event.items() if k != "type"}
            sink.LINES.append(f"ext#{n}:{kind} " + json.dumps(payload, separators=(",", ":")))
            hook = sink.HOOKS.get(kind)
            if hook is not None:
                hook(event, ctx)
            if sink.CANCEL.get(kind):
                return {"cancel": True}
            return None
        return handler

    for kind in ("session_start", "session_shutdown", "session_before_switch", "session_before_fork"):
        pi.on(kind, make(kind))
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class InjectedFactoryError(Exception):
    pass


class TracingFactory:
    """Wraps the real default factory: records each call as Pi's probe did, can be told
    to fail the next call, and instruments every session's ``abort``/``dispose``."""

    def __init__(self, inner: RuntimeFactory) -> None:
        self.inner = inner
        self.calls = 0
        self.sessions = 0
        self.fail_next = False

    async def __call__(
        self,
        *,
        cwd: str,
        agent_dir: str,
        session_manager: SessionManager,
        session_start_event: Mapping[str, Any] | None,
    ) -> CreateRuntimeResult:
        self.calls += 1
        payload: dict[str, Any] = {"cwd": cwd, "sessionFile": session_manager.get_session_file()}
        if session_start_event is not None:
            payload["sessionStartEvent"] = dict(session_start_event)
        sink.LINES.append(f"factory#{self.calls} {dumps(payload)}")
        if self.fail_next:
            self.fail_next = False
            sink.LINES.append(f"factory#{self.calls} THROWS (probe-injected failure)")
            raise InjectedFactoryError("probe: injected runtime factory failure")
        result = await self.inner(
            cwd=cwd,
            agent_dir=agent_dir,
            session_manager=session_manager,
            session_start_event=session_start_event,
        )
        self.sessions += 1
        _instrument(result.session, self.sessions)
        return result


def _instrument(session: Any, n: int) -> None:
    original_abort = session.abort
    original_dispose = session.dispose

    async def abort() -> None:
        sink.LINES.append(f"session#{n}.abort() called {dumps({'isStreaming': session.is_streaming})}")
        await original_abort()
        sink.LINES.append(f"session#{n}.abort() settled")

    def dispose() -> None:
        sink.LINES.append(f"session#{n}.dispose()")
        original_dispose()

    session.abort = abort
    session.dispose = dispose


def attach_host(runtime: AgentSessionRuntime, bindings: ExtensionBindings | None = None) -> None:
    """The host's two callbacks, recorded like the probe's."""
    bound = bindings or ExtensionBindings()

    def before_invalidate(reason: str) -> None:
        sink.LINES.append(f"beforeSessionInvalidate {dumps({'sessionFile': runtime.session.session_file})}")

    async def rebind(session: Any) -> None:
        sink.LINES.append(f"rebindSession:start {dumps({'sessionFile': session.session_file})}")
        await session.bind_extensions(bound)
        sink.LINES.append("rebindSession:end")

    runtime.set_before_session_invalidate(before_invalidate)
    runtime.set_rebind_session(rebind)


async def trust_everything(cwd: str, context: ProjectTrustContext) -> TrustDecision:
    return TrustDecision("trust")


def make_agent_dir(root: Path, *, tracer: bool = True) -> Path:
    agent_dir = root / "agent"
    write(agent_dir / "settings.json", json.dumps({"theme": "global"}))
    write(agent_dir / "AGENTS.md", "global instructions\n")
    if tracer:
        write(agent_dir / "extensions" / "tracer.py", TRACER_SOURCE)
    return agent_dir


async def start_runtime(
    cwd: Path,
    agent_dir: Path,
    *,
    faux: FauxProvider | None = None,
    process_inputs: ProcessInputs | None = None,
    session_manager: SessionManager | None = None,
    session_dir: str | None = None,
    bindings: ExtensionBindings | None = None,
) -> tuple[AgentSessionRuntime, TracingFactory, FauxProvider]:
    """Create a runtime with the real default factory (wrapped for tracing) and bind it
    like the host does."""
    provider = faux or FauxProvider()
    inner = make_default_factory(
        process_inputs or ProcessInputs(),
        authorize_project=trust_everything,
        provider_registry=ProviderRegistry([provider]),
    )
    factory = TracingFactory(inner)
    sm = session_manager or SessionManager.create(str(cwd), agent_dir=str(agent_dir))
    runtime = await create_runtime(
        factory, cwd=str(cwd), agent_dir=str(agent_dir), session_manager=sm, session_dir=session_dir
    )
    attach_host(runtime)
    await runtime.session.bind_extensions(bindings or ExtensionBindings())
    return runtime, factory, provider


# -- trace normalisation -------------------------------------------------------------------


def pi_trace() -> list[str]:
    data = json.loads(PI_TRACE_FILE.read_text())
    lines: list[str] = data["trace"]
    return lines


def pi_segment(title: str, *, occurrence: int = 1) -> list[str]:
    """Pi's lines between ``== <title>`` and ``== <title> done`` (or its ``!! <title>`` line)."""
    lines = pi_trace()
    seen = 0
    for index, line in enumerate(lines):
        if line == f"== {title}":
            seen += 1
            if seen < occurrence:
                continue
            out: list[str] = []
            for follower in lines[index + 1 :]:
                if follower == f"== {title} done":
                    return out
                out.append(follower)
                if follower.startswith(f"!! {title}"):
                    return out
            return out
    raise KeyError(title)


def normalize(lines: list[str]) -> list[tuple[Any, ...]]:
    """Comparable tokens: instance numbers become old/new, absolute paths become P1, P2, ...
    and entry ids E<n>, in order of first appearance, errors become ``("error",)``."""
    symbols: dict[str, str] = {}
    instances: dict[str, str] = {}

    def sym(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("/"):
            return symbols.setdefault(value, f"P{len(symbols) + 1}")
        if isinstance(value, str) and ENTRY_ID.fullmatch(value):
            return symbols.setdefault(value, f"E{len(symbols) + 1}")
        if isinstance(value, dict):
            return tuple(sorted((k, sym(v)) for k, v in value.items()))
        return value

    def instance(tag: str) -> str:
        return instances.setdefault(tag, ["old", "new", "newer"][min(len(instances), 2)])

    out: list[tuple[Any, ...]] = []
    for line in lines:
        if line.startswith("!! "):
            out.append(("error",))
            continue
        if line.startswith("== "):
            continue
        head, _, rest = line.partition(" ")
        if head.startswith("ext#"):
            tag, _, kind = head.partition(":")
            out.append(("ext", instance(tag), kind, sym(json.loads(rest))))
        elif head.startswith("session#") and head.endswith(".abort()"):
            verb, _, payload = rest.partition(" ")
            out.append(("abort", verb, sym(json.loads(payload)) if payload else None))
        elif head.startswith("session#") and head.endswith(".dispose()"):
            out.append(("dispose",))
        elif head == "beforeSessionInvalidate":
            out.append(("beforeSessionInvalidate", sym(json.loads(rest))))
        elif head.startswith("factory#"):
            out.append(("factory", "THROWS") if rest.startswith("THROWS") else ("factory", sym(json.loads(rest))))
        elif head == "rebindSession:start":
            out.append(("rebind:start", sym(json.loads(rest))))
        elif head == "rebindSession:end":
            out.append(("rebind:end",))
        else:
            out.append(("other", line))
    return out
