"""A real runtime (default factory, faux model, session file on disk) set up for compaction:
a model with a small context window, compaction settings, an event recorder, and helpers to
fill a session with long turns."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import attrs

from rpcd.providers.base import ModelInfo
from rpcd.providers.faux import FauxProvider
from rpcd.runtime.runtime import AgentSessionRuntime
from rpcd.runtime.session import AgentSession
from tests.runtime._support import make_agent_dir, start_runtime, write

WINDOW = 8_000
RESERVE = 2_000
KEEP = 700


@attrs.define
class World:
    runtime: AgentSessionRuntime
    faux: FauxProvider
    events: list[dict[str, Any]]
    agent_dir: Path
    project: Path

    @property
    def session(self) -> AgentSession:
        session = self.runtime.session
        assert isinstance(session, AgentSession)
        return session

    def types(self, *wanted: str) -> list[str]:
        return [e["type"] for e in self.events if not wanted or e["type"] in wanted]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    def file_bytes(self) -> bytes:
        return Path(str(self.session.session_file)).read_bytes()

    def file_entries(self) -> list[dict[str, Any]]:
        path = self.session.session_file
        assert path is not None
        return [json.loads(line) for line in Path(path).read_text().splitlines()[1:]]

    async def long_turns(self, n: int, size: int = 1_200) -> None:
        """``n`` prompts answered with ``size``-character replies (each ~size/4 tokens)."""
        for i in range(n):
            self.faux.push({"text": f"answer {i} " + "z" * size})
            assert await self.session.prompt(f"question {i} " + "q" * 200) == "stop"

    async def close(self) -> None:
        await self.runtime.dispose()


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        for _ in itertools.count():
            if predicate():
                return
            await anyio.sleep(0.005)


def faux_model(window: int = WINDOW, max_tokens: int = 4_000) -> FauxProvider:
    model = ModelInfo(provider="faux", id="faux-1", name="Faux Model", api="faux", context_window=window,
                      max_tokens=max_tokens)
    return FauxProvider(models=[model])


async def world(tmp_path: Path, *, settings: Mapping[str, Any] | None = None, extension: str | None = None,
                faux: FauxProvider | None = None) -> World:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    compaction = {"enabled": True, "reserveTokens": RESERVE, "keepRecentTokens": KEEP}
    config: dict[str, Any] = {"compaction": compaction, "retry": {"baseDelayMs": 1}}
    config.update(settings or {})
    write(agent_dir / "settings.json", json.dumps(config))
    if extension is not None:
        write(agent_dir / "extensions" / "ext.py", extension)
    runtime, _, provider = await start_runtime(project, agent_dir, faux=faux or faux_model())
    events: list[dict[str, Any]] = []
    runtime.session.subscribe(lambda event: events.append(dict(event)))
    return World(runtime, provider, events, agent_dir, project)
