"""``rpcd acp [flags]``: the daemon's flags, then the ACP front (``rpcd.acp``).

Only this mode imports the ACP SDK (and pydantic); the JSON-RPC daemon's startup never does, and
this mode never imports the JSON-RPC endpoint (pygls).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from rpcd.acp.config import AcpConfig
from rpcd.daemon.logs import configure_logging
from rpcd.daemon.options import Options, parse_options
from rpcd.daemon.process import arm_exit_watchdog, end_when_threads_end
from rpcd.store import writer_lock
from rpcd.transport.stdio import FLUSH_TIMEOUT, guard_stdout

log = logging.getLogger("rpcd.acp")



def acp_config(options: Options) -> AcpConfig:
    """The ACP front's configuration from the daemon's options."""
    return AcpConfig(spec=options.spec, max_message_bytes=options.max_message_bytes)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(sys.argv[2:] if argv is None else argv, prog="rpcd acp")
    configure_logging(options.log_level)
    out_fd = guard_stdout()
    if options.target in ("resume", "continue", "resume-last"):
        log.warning("--%s is ignored by rpcd acp: the client opens sessions (session/new, session/load)",
                    options.target)
    # A session's file has one writer among rpcd processes, in this front too (rpcd.store.writer_lock).
    writer_lock.set_enabled(True)
    from rpcd.acp.app import run  # the SDK (pydantic) is imported here, in this mode only

    code = run(acp_config(options), 0, out_fd,
               on_ending=lambda: arm_exit_watchdog(2 * options.exit_timeout + FLUSH_TIMEOUT))
    return end_when_threads_end(code)
