"""``python -m rpcd`` / the ``rpcd`` console script: the JSON-RPC daemon (``rpcd.daemon.app``), or with
``acp`` first, the Agent Client Protocol front (``rpcd.daemon.acp``), or with ``login`` (or ``acp --login``)
a provider login at the terminal (``rpcd.daemon.login``), or with ``--mode rpc`` (anywhere, as Pi reads
it) Pi's own RPC wire (``rpcd.daemon.pirpc``). Each mode imports only its own endpoint: the daemon never
loads the ACP SDK, ``rpcd acp`` and ``rpcd --mode rpc`` never load pygls. ``rpcd extensions setup``
installs the TypeScript extension host's packages ahead of time (``rpcd.daemon.extensions_setup``);
``rpcd packages list|install|remove`` manages Pi packages (``rpcd.daemon.packages_cli``).

``run`` (the console script, ``python -m rpcd``) ends the process with ``rpcd.daemon.process.end_process``
once ``main`` has returned: everything is flushed and fsynced by then, so the interpreter's teardown
is skipped. ``main`` itself returns normally (for callers in the same process)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn


def _starting() -> None:
    """Before anything that defines an attrs class is imported: their methods' bytecode is reused, not
    compiled again (``rpcd.core.attrs_methods``)."""
    from rpcd.core.attrs_methods import install

    install()


def main(argv: Sequence[str] | None = None) -> int:
    _starting()
    import rpcd.core.collection as collection  # stdlib only: before the front's imports, which it speeds up
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["login"] or (args[:1] == ["acp"] and "--login" in args):
        # a login at the terminal (``rpcd acp --login P``: what an ACP client runs for a terminal auth method)
        from rpcd.daemon.login import main as login_main

        rest = [a for a in args[1:] if a != "--login"]
        return login_main(rest)
    if args[:1] == ["acp"]:
        collection.hold()  # until its first session is answered (RpcdAgent.new_session)
        from rpcd.daemon.acp import main as acp_main

        return acp_main(args[1:])
    if args[:2] == ["extensions", "setup"]:
        from rpcd.daemon.extensions_setup import main as setup_main

        return setup_main(args[2:])
    if args[:1] == ["packages"]:
        from rpcd.daemon.packages_cli import main as packages_main

        return packages_main(args[1:])
    if "--mode" in args[:-1]:
        collection.hold()  # until its session is open (rpcd.pirpc.app.serve)
        from rpcd.daemon.pirpc import main as pi_main

        return pi_main(args)
    collection.hold()  # until the daemon's first session is open (Daemon._report_startup)
    from rpcd.daemon.app import main as daemon_main

    return daemon_main(args)


def run() -> NoReturn:
    _starting()
    from rpcd.daemon.process import end_process

    try:
        code = main()
    except KeyboardInterrupt:  # Ctrl-C before the front watches its end signals (still starting): no traceback
        code = 128 + 2
    end_process(code)


if __name__ == "__main__":
    run()
