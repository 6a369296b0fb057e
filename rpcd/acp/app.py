"""``rpcd acp``: serve ACP v1 on stdin/stdout until the client closes stdin (or SIGTERM/SIGHUP/SIGINT).

The orderly end: every live session is closed — its running turn aborted and persisted, its host
disposed — then the answers still owed are written and stdout is flushed. Exit status 0, or 1 when a
disposal failed (logged flat). Every wait of the end is bounded by ``--exit-timeout``, as in the
JSON-RPC daemon (each session's final disposal, then the answers still owed); a signal that arrives
while the end is under way exits at once (``rpcd.transport.signals``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
import anyio.abc

from rpcd.acp.agent import RpcdAgent
from rpcd.acp.config import AcpConfig
from rpcd.acp.connection import AcpConnection
from rpcd.acp.stdio import StdioMessages
from rpcd.sessions.hub import log_failure
from rpcd.sessions.spec import EXIT_FAILED, EXIT_OK
from rpcd.transport.signals import watch_end_signals

log = logging.getLogger("rpcd.acp")


async def serve(config: AcpConfig, in_fd: int, out_fd: int, *, on_ending: Callable[[], None] | None = None) -> int:
    transport = StdioMessages(in_fd, out_fd, max_message_bytes=config.max_message_bytes)
    transport.start()
    failures: list[BaseException] = []
    timeout = config.spec.exit_timeout
    async with anyio.create_task_group() as group:
        agent = RpcdAgent(config, group)
        conn = AcpConnection(agent, transport)
        agent.attach(conn)
        async with agent.services.serving():
            ended = anyio.Event()  # the orderly end has begun (the end of input, or a signal)

            def begin_end(_: int) -> None:
                ended.set()
                serving.cancel()

            with anyio.CancelScope() as serving:
                await group.start(watch_end_signals, begin_end, ended.is_set, log)
                await conn.serve()
            ended.set()
            agent.services.stop_warming()
            if on_ending is not None:
                on_ending()
            with anyio.CancelScope(shield=True):
                # The client is gone (or a signal came): running turns stop, every request already
                # received gets its answer, then every session is closed (turns persisted, hosts
                # disposed, each bounded by --exit-timeout).
                with anyio.move_on_after(timeout):
                    await agent.cancel_all()
                    await conn.wait_idle()
                failures = await agent.close_all()
                with anyio.move_on_after(timeout):
                    await conn.close()
        group.cancel_scope.cancel()
    await transport.close()
    for failure in failures:
        log_failure("final disposal failed", failure, log)
    return EXIT_FAILED if failures else EXIT_OK


def run(config: AcpConfig, in_fd: int, out_fd: int, *, on_ending: Callable[[], None] | None = None) -> int:
    async def main() -> int:
        return await serve(config, in_fd, out_fd, on_ending=on_ending)

    result: int = anyio.run(main, backend="asyncio")
    return result
