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
from rpcd.tools import ToolSelection
from rpcd.transport.stdio import guard_stdout

log = logging.getLogger("rpcd.acp")


def acp_config(options: Options) -> AcpConfig:
    """The ACP front's configuration from the daemon's options."""
    return AcpConfig(
        agent_dir=options.agent_dir,
        trust_policy=options.trust_policy,
        trust_timeout=options.trust_timeout,
        approval=options.approval,
        approval_timeout=options.approval_timeout,
        extensions=options.extensions,
        extension_flags=options.extension_flags,
        no_context_files=options.no_context_files,
        model_inputs=options.model_inputs,
        tool_selection=ToolSelection(allow=options.tools, exclude=options.exclude_tools,
                                     no_builtin_tools=options.no_builtin_tools, no_tools=options.no_tools),
        in_memory=options.target == "in-memory",
        max_message_bytes=options.max_message_bytes,
    )


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(sys.argv[2:] if argv is None else argv, prog="rpcd acp")
    configure_logging(options.log_level)
    out_fd = guard_stdout()
    if options.target in ("resume", "continue", "resume-last"):
        log.warning("--%s is ignored by rpcd acp: the client opens sessions (session/new, session/load)",
                    options.target)
    from rpcd.acp.app import run  # the SDK (pydantic) is imported here, in this mode only

    return run(acp_config(options), 0, out_fd)
