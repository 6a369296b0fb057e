"""Fixtures of the MCP tests: the npm reference servers (skipped, saying why, only when npm or its
registry cannot be had; ``RPCD_REQUIRE_PI_ORACLE=1`` makes that a failure, as for the Pi oracle)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import anyio
import pytest

from rpcd.mcp.pool import McpPool
from tests.mcp.npm_servers import NpmServers, ensure_servers
from tests.pi_compat.oracle import OracleUnavailable


@pytest.fixture(scope="session")
def npm_servers() -> NpmServers:
    try:
        return ensure_servers()
    except OracleUnavailable as exc:
        message = f"the npm MCP reference servers are unavailable: {exc}"
        if os.environ.get("RPCD_REQUIRE_PI_ORACLE") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
async def pool() -> AsyncIterator[McpPool]:
    """A process pool in the test's own task group; a released server stops at once (no linger)."""
    pool = McpPool(linger=0.0)
    async with anyio.create_task_group() as group:
        await group.start(pool.run)
        try:
            yield pool
        finally:
            await pool.close()


from tests.acp.conftest import agent_dir, project  # noqa: E402,F401 - the ACP front's projects and agent dir
