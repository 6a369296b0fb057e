"""Fixtures for host tests: a fake runtime, recording bindings and a bound host, all sharing one trace."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.abc
import attrs
import pytest

from rpcd.host.host import HostStatus, SerializedHost
from tests.host.fake_runtime import FakeBindings, FakeRuntime, Faults, Steps

PROJECT = "/work/project-a"
OTHER = "/work/project-b"
OTHER_FILE = "/sessions/other.jsonl"


@attrs.define
class Harness:
    runtime: FakeRuntime
    bindings: FakeBindings
    faults: Faults
    steps: Steps
    statuses: list[tuple[HostStatus, int]]
    task_group: anyio.abc.TaskGroup
    host: SerializedHost | None = None

    @property
    def trace(self) -> list[str]:
        return self.steps.trace

    async def bind(self) -> SerializedHost:
        self.host = await SerializedHost.bind(
            self.runtime,
            self.bindings,
            task_group=self.task_group,
            on_status=lambda status, gen: self.statuses.append((status, gen)),
        )
        return self.host


@pytest.fixture
async def host_task_group() -> AsyncIterator[anyio.abc.TaskGroup]:
    """Where the hosts of one test run their worker; cancelled when the test ends."""
    async with anyio.create_task_group() as task_group:
        yield task_group
        task_group.cancel_scope.cancel()


async def _harness(task_group: anyio.abc.TaskGroup, **runtime_kwargs: Any) -> Harness:
    faults, steps = Faults(), Steps()
    runtime_kwargs.setdefault("files", {OTHER_FILE: (OTHER, {"o1": "user", "o2": "assistant"})})
    runtime_kwargs.setdefault("existing_dirs", {PROJECT, OTHER})
    runtime = await FakeRuntime.create(PROJECT, faults=faults, steps=steps, **runtime_kwargs)
    steps.trace.clear()
    return Harness(runtime, FakeBindings(faults, steps), faults, steps, [], task_group)


@pytest.fixture
def make_harness(host_task_group: anyio.abc.TaskGroup) -> Callable[..., Any]:
    """``await make_harness(**runtime_kwargs)``: an unbound harness (for startup tests)."""
    return lambda **kwargs: _harness(host_task_group, **kwargs)


@pytest.fixture
async def harness(host_task_group: anyio.abc.TaskGroup) -> Harness:
    h = await _harness(host_task_group)
    await h.bind()
    h.steps.trace.clear()
    return h
