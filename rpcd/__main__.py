"""``python -m rpcd`` / the ``rpcd`` console script: the JSON-RPC daemon (``rpcd.daemon.app``), or with
``acp`` first, the Agent Client Protocol front (``rpcd.daemon.acp``). Each mode imports only its own
endpoint: the daemon never loads the ACP SDK, ``rpcd acp`` never loads pygls."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["acp"]:
        from rpcd.daemon.acp import main as acp_main

        return acp_main(args[1:])
    from rpcd.daemon.app import main as daemon_main

    return daemon_main(args)


if __name__ == "__main__":
    raise SystemExit(main())
