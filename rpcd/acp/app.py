"""``rpcd acp``: serve ACP v1 on stdin/stdout until the client closes stdin (or SIGTERM/SIGHUP).

The orderly end: every live session is closed — its running turn aborted and persisted, its host
disposed — then the answers still owed are written and stdout is flushed. Exit status 0, or 1 when a
disposal failed (logged flat). A second signal exits at once.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Final

import anyio
import anyio.abc

from rpcd.acp.agent import RpcdAgent
from rpcd.acp.config import AcpConfig
from rpcd.acp.connection import AcpConnection
from rpcd.acp.stdio import StdioMessages

log = logging.getLogger("rpcd.acp")

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
END_TIMEOUT: Final = 30.0
"""How long the orderly end may take (a disposal that never returns must not keep the process)."""


async def serve(config: AcpConfig, in_fd: int, out_fd: int) -> int:
    transport = StdioMessages(in_fd, out_fd, max_message_bytes=config.max_message_bytes)
    transport.start()
    failures: list[BaseException] = []
    async with anyio.create_task_group() as group:
        agent = RpcdAgent(config, group)
        conn = AcpConnection(agent, transport)
        agent.attach(conn)
        with anyio.CancelScope() as serving:
            group.start_soon(_end_on_signal, serving)
            await conn.serve()
        with anyio.CancelScope(shield=True), anyio.move_on_after(END_TIMEOUT):
            # The client is gone (or a signal came): running turns stop, every request already
            # received gets its answer, then every session is closed (turns persisted, hosts disposed).
            await agent.cancel_all()
            await conn.wait_idle()
            failures = await agent.close_all()
            await conn.close()
        group.cancel_scope.cancel()
    await transport.close()
    for failure in failures:
        log.error("a session's final disposal failed: %s", type(failure).__name__)
    return EXIT_FAILED if failures else EXIT_OK


async def _end_on_signal(serving: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            if serving.cancel_called:
                log.warning("second signal %s: exiting at once", signum)
                os._exit(EXIT_FAILED)
            log.info("signal %s: ending in order", signum)
            serving.cancel()


def run(config: AcpConfig, in_fd: int, out_fd: int) -> int:
    result: int = anyio.run(serve, config, in_fd, out_fd, backend="asyncio")
    return result
