"""The Python library's public surface: an explicit ``__all__``, a blocking facade generated from
the async client (stale = failure, like httpcore's unasync check) with the same typed parameters,
and no printing (swallowed problems go to the ``rpcd.clients`` logger)."""

from __future__ import annotations

import ast
import asyncio
import inspect
import logging
import subprocess
import sys
from pathlib import Path

import pytest

import rpcd.clients
from rpcd.clients import unasync
from rpcd.clients.client import RpcdClient
from rpcd.clients.sync import SyncClient
from tests.clients.conftest import REPO

CLIENTS = REPO / "clients"
LIBRARY = ("client.py", "connection.py", "sync.py", "_sync_methods.py", "process.py", "framing.py", "errors.py",
           "types.py", "__init__.py")


def test_the_package_exports_exactly_its_public_names() -> None:
    assert sorted(rpcd.clients.__all__) == sorted(
        ["ClientError", "ConnectionClosed", "DaemonDied", "EventStream", "ProtocolViolation", "RpcError",
         "RpcTimeout", "RpcdClient", "SyncClient", "spawn"])
    for name in rpcd.clients.__all__:
        assert getattr(rpcd.clients, name).__module__.startswith("rpcd.clients")


def test_the_generated_sync_facade_is_current() -> None:
    done = subprocess.run([sys.executable, "-m", "rpcd.clients.unasync", "--check"], capture_output=True, text=True,
                          cwd=REPO, check=False, timeout=60)
    assert done.returncode == 0, done.stderr


def test_check_fails_on_a_stale_facade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "_sync_methods.py"
    stale.write_text(unasync.TARGET.read_text().replace("def get_state", "def get_statе"))
    monkeypatch.setattr(unasync, "TARGET", stale)
    assert unasync.main(["--check"]) == 1


def test_every_async_call_has_a_blocking_twin_with_the_same_parameters() -> None:
    public = {name for name, fn in inspect.getmembers(RpcdClient, inspect.iscoroutinefunction)
              if not name.startswith("_") and name not in unasync.SKIP}
    assert public and public <= set(dir(SyncClient))
    for name in public:
        asynchronous = inspect.signature(getattr(RpcdClient, name))
        blocking = inspect.signature(getattr(SyncClient, name))
        assert list(asynchronous.parameters) == list(blocking.parameters), name
        for parameter, twin in zip(asynchronous.parameters.values(), blocking.parameters.values(), strict=True):
            assert (parameter.kind, parameter.annotation) == (twin.kind, twin.annotation), (name, parameter.name)
        assert "**kwargs" not in str(blocking), name


def test_the_library_never_prints() -> None:
    for name in LIBRARY:
        tree = ast.parse((CLIENTS / name).read_text())
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == "print"]
        # process.py echoes the daemon's stderr only into the stream the caller passed (echo_stderr)
        allowed = 1 if name == "process.py" else 0
        assert len(calls) <= allowed, name


def test_a_failing_listener_is_logged_not_printed(caplog: pytest.LogCaptureFixture,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    async def run() -> None:
        reader = asyncio.StreamReader()
        client = RpcdClient(reader, _NullSink())
        client.on_notification(lambda method, params: 1 / 0)
        with caplog.at_level(logging.WARNING, logger="rpcd.clients"):
            client._on_notification("host/status", {"status": "ready", "generation": 0})

    asyncio.run(run())
    assert "notification listener failed: ZeroDivisionError" in caplog.text
    assert capsys.readouterr().err == ""


class _NullSink:
    def write(self, data: bytes) -> None:
        del data

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


USER_CODE = '''
from rpcd.clients import RpcError, SyncClient
from rpcd.clients.types import PromptResult


def reply(client: SyncClient) -> str:
    result: PromptResult = client.prompt("hi")
    return result.get("text", "")


def broken(client: SyncClient) -> int:
    return client.prompt("hi")  # a PromptResult is not an int: mypy must see the library to say so


__all__ = ["RpcError", "broken", "reply"]
'''


def test_mypy_sees_the_library_through_the_venvs_editable_install(tmp_path: Path) -> None:
    """A user's project type-checked by the venv's mypy (run outside the checkout) sees rpcd.clients:
    setuptools' editable finder is invisible to type checkers, so ``scripts/_venv.sh`` adds a path
    entry holding only ``rpcd``."""
    venv = REPO / ".venv"
    if not (venv / "bin" / "mypy").exists():
        pytest.skip("no .venv with mypy (scripts/test creates it)")
    (tmp_path / "user.py").write_text(USER_CODE)
    done = subprocess.run([str(venv / "bin" / "mypy"), "--strict", "--no-incremental", "user.py"], cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert "import-not-found" not in done.stdout and "Cannot find implementation" not in done.stdout, done.stdout
    assert 'Incompatible return value type (got "PromptResult", expected "int")' in done.stdout, done.stdout
    assert done.stdout.count("error:") == 1, done.stdout
