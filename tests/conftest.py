"""Shared pytest configuration: async tests run on anyio's asyncio backend, and no test
touches the real home directory.

Why the home is redirected for the whole run: every spawned daemon writes its host journal
at startup, into ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent`` — a test that forgets
``--agent-dir`` (or a client helper that drops the variable) would otherwise write into the
developer's real Pi directory. Tools that are found *through* the real home keep working:
their locations are pinned by their own variables before ``HOME`` moves.

Provider credentials are removed from the environment for the whole run too: rpcd picks
its model the way Pi does, so a developer's ``ANTHROPIC_API_KEY`` would otherwise turn
every test's offline faux model into a real, billed network model. Tests that need a key
plant their own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def collector_runs() -> Iterator[list[int]]:
    """The generation of every cyclic collection that runs during the test (``gc.callbacks``), with the
    collector on and emptied first; a test clears the list before the part it watches."""
    import gc

    was = gc.isenabled()
    gc.enable()
    gc.collect()
    seen: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(watch)
    yield seen
    gc.callbacks.remove(watch)
    (gc.enable if was else gc.disable)()


def provider_env_names() -> list[str]:
    """Every variable Pi reads credentials from (the catalog's table) plus the ones that
    change provider behaviour."""
    from rpcd.providers.catalog import builtin_catalog

    names = {name for p in builtin_catalog().providers.values() for name in p.auth.env_names}
    names.update({"PI_CACHE_RETENTION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                  "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
                  "CLOUDFLARE_API_KEY", "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_GATEWAY_ID", "AWS_SESSION_TOKEN",
                  "AWS_BEARER_TOKEN_BEDROCK"})
    return sorted(names)


def _tool_locations(real_home: Path) -> dict[str, str]:
    """Variables that keep home-based tools where they are (only for what exists, only if unset)."""
    from tests.acp.ts_sdk import sdk_dir
    from tests.mcp.npm_servers import SERVERS_VERSION as MCP_SERVERS_VERSION
    from tests.pi_compat.oracle import oracle_dir

    # Created on first use, so pinned even before they exist: a fresh machine installs the Pi
    # oracle and fills npm's cache once, not once per test run inside a throwaway home.
    created_on_use = {
        "RPCD_PI_ORACLE_DIR": oracle_dir(),  # the Pi install the compatibility tests use
        "RPCD_ACP_SDK_DIR": sdk_dir(),  # the TypeScript ACP SDK the ACP tests use as a client
        "RPCD_MCP_SERVERS_DIR": real_home / ".cache" / "rpcd" / f"mcp-servers-{MCP_SERVERS_VERSION}",
        "NPM_CONFIG_CACHE": real_home / ".npm",
    }
    only_if_present = {
        "PYENV_ROOT": real_home / ".pyenv",  # PATH may run python through pyenv shims
        "NPM_CONFIG_USERCONFIG": real_home / ".npmrc",  # the Node client test may `npm install`
    }
    pinned = {name: str(path) for name, path in created_on_use.items() if name not in os.environ}
    pinned.update(
        {name: str(path) for name, path in only_if_present.items() if name not in os.environ and path.exists()}
    )
    return pinned


@pytest.fixture(autouse=True, scope="session")
def isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``HOME`` and ``PI_CODING_AGENT_DIR`` point into one temp dir for the whole run."""
    home = tmp_path_factory.mktemp("home")
    pinned = _tool_locations(Path.home())
    with pytest.MonkeyPatch.context() as patch:
        for name, value in pinned.items():
            patch.setenv(name, value)
        patch.setenv("HOME", str(home))
        patch.setenv("PI_CODING_AGENT_DIR", str(home / ".pi" / "agent"))
        for name in provider_env_names():
            patch.delenv(name, raising=False)
        yield home


LONG_RUN_TIMEOUT_S = 3600
"""Per-test limit under ``RPCD_LONG=1``: thousands of fuzz examples or hundreds of kill -9 runs in one
test legitimately take minutes; the default 300 s (pyproject) still catches a hang in the normal run."""


def pytest_configure(config: pytest.Config) -> None:
    """The session files the suite writes (in this process and in every daemon it spawns) are not
    ``fsync``ed per entry: docs/store.md's switch for test runs, set before ``rpcd.store`` is imported
    (a machine crash cannot be observed here; each fsync cost 4-12 ms on the CI disk, a few per turn).
    ``RPCD_STORE_FSYNC=1 ./scripts/test`` keeps them; tests of a failing fsync set it themselves."""
    os.environ.setdefault("RPCD_STORE_FSYNC", "0")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("RPCD_LONG") == "1":
        for item in items:
            item.add_marker(pytest.mark.timeout(LONG_RUN_TIMEOUT_S), append=False)


@pytest.fixture(autouse=True)
def session_events_match_their_schema() -> Iterator[None]:
    """Every ``session/event`` / ``session/lifecycle`` a test's daemons sent matches its published
    schema (``tests/event_schema.py``): the whole end-to-end suite checks the event contract."""
    from tests import driver
    from tests.event_schema import problems_in

    first = len(driver.STARTED)
    yield
    started = driver.STARTED[first:]
    del driver.STARTED[first:]
    problems = problems_in(message for daemon in started for message in list(daemon.log))
    if problems:
        pytest.fail("session events break their schema:\n" + "\n".join(problems[:20]), pytrace=False)
