"""``python -m rpcd``: the daemon.

This module calls the composition root ``rpcd.app.main(argv) -> int``. Only if that module is
absent does a bare wire server run: ``initialize``, ``shutdown``, ``exit`` and ``ping`` — a
real daemon end to end, with no session behind it (``standalone_main``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from rpcd.logs import LEVELS, configure_logging
from rpcd.server import create_server, run_stdio
from rpcd.transport import DEFAULT_MAX_MESSAGE_BYTES


def add_wire_arguments(parser: argparse.ArgumentParser) -> None:
    """The wire's own flags; the composition root can reuse them in its parser."""
    parser.add_argument("--log-level", choices=[*LEVELS, "warn"], default=None,
                        help="stderr log level (default: $RPCD_LOG_LEVEL or info)")
    parser.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES,
                        help="frames larger than this are drained and answered with -32012")


def standalone_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rpcd", description="JSON-RPC 2.0 daemon over stdio (wire only).")
    add_wire_arguments(parser)
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    server = create_server(max_message_bytes=args.max_message_bytes)
    return run_stdio(server)


def _app_main() -> Callable[[Sequence[str] | None], int] | None:
    try:
        module = importlib.import_module("rpcd.app")
    except ModuleNotFoundError as exc:
        if exc.name != "rpcd.app":
            raise
        return None
    entry = getattr(module, "main", None)
    return entry if callable(entry) else None


def main(argv: Sequence[str] | None = None) -> int:
    app_main = _app_main()
    if app_main is not None:
        return app_main(list(sys.argv[1:]) if argv is None else list(argv))
    return standalone_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
