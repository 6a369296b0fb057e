"""A real server built from ``create_server`` plus test-only handlers: served in memory by the pair
(``tests/wire/pair.py``) or run as a subprocess (``python -m tests.wire.fixture_server``).

``build()``'s options, or for the subprocess the environment: ``FIXTURE_MAX_BYTES`` (frame limit),
``FIXTURE_DISPOSE_MARK`` (file written by the dispose hook), ``FIXTURE_DISPOSE_FAIL=1`` (the hook raises).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import anyio
import attrs

from rpcd.core import errors
from rpcd.daemon.logs import configure_logging
from rpcd.host.failures import FailureContext, attach_context
from rpcd.protocol.errors import RpcError
from rpcd.wire.server import Server, create_server, run_stdio

SECRET = "sk-fixture0123456789abcdef"


@attrs.frozen
class EchoParams:
    value: Any


@attrs.frozen
class SleepParams:
    seconds: float


@attrs.frozen
class AskParams:
    timeout: float


def build(
    *, max_message_bytes: int | None = None, dispose_mark: str | None = None, dispose_fail: bool | None = None
) -> Server:
    mark = dispose_mark if dispose_mark is not None else os.environ.get("FIXTURE_DISPOSE_MARK")
    fail = dispose_fail if dispose_fail is not None else os.environ.get("FIXTURE_DISPOSE_FAIL") == "1"

    async def dispose() -> None:
        if mark:
            with open(mark, "a") as fh:  # noqa: ASYNC230 - a test marker, tiny and local
                fh.write("disposed\n")
        if fail:
            raise errors.SessionWriteError("could not flush the session file", session_path="/tmp/x.jsonl")

    limit = max_message_bytes if max_message_bytes is not None else int(os.environ.get("FIXTURE_MAX_BYTES", 64 << 20))
    server = create_server(max_message_bytes=limit, dispose_hook=dispose)

    @server.method("test/echo", EchoParams)
    async def echo(params: EchoParams) -> dict[str, Any]:
        return {"value": params.value}

    @server.method("test/print")
    async def stray_print() -> str:
        print("stray print from a handler")
        os.write(1, b"raw write to fd 1\n")
        # Blocking on purpose: a child inheriting fd 1 must not reach the protocol stream.
        subprocess.run([sys.executable, "-c", "print('child process output')"], check=True)  # noqa: ASYNC221
        return "printed"

    @server.method("test/sleep", SleepParams)
    async def sleep(params: SleepParams) -> str:
        await anyio.sleep(params.seconds)
        return "slept"

    @server.method("test/crash")
    async def crash() -> None:
        raise RuntimeError(f"boom with {SECRET} and transcript text")

    @server.method("test/notFound")
    async def not_found() -> None:
        raise errors.SessionFileNotFoundError("no such session file", session_path="/nowhere.jsonl")

    @server.method("test/terminal")
    async def terminal() -> None:
        primary = errors.FactoryError("factory failed", cwd="/proj")
        group = ExceptionGroup("replacement failed", [primary, errors.SessionWriteError("cleanup failed")])
        attach_context(group, FailureContext("fork", "session replacement", cwd="/proj", terminal=True))
        raise group

    @server.method("test/badResult")
    async def bad_result() -> object:
        return {"a": {1, 2}}

    @server.method("test/ask", AskParams)
    async def ask(params: AskParams) -> dict[str, Any]:
        try:
            answer = await server.request_client("ui/confirm", {"title": "t", "message": "m"}, timeout=params.timeout)
        except TimeoutError:
            return {"outcome": "timeout"}
        except RpcError as exc:
            return {"outcome": "error", "code": exc.code}
        return {"outcome": "answered", "answer": answer}

    return server


if __name__ == "__main__":
    configure_logging(os.environ.get("RPCD_LOG_LEVEL", "info"))
    raise SystemExit(run_stdio(build()))
