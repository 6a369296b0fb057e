"""``python -m rpcd`` / the ``rpcd`` console script: the daemon (``rpcd.daemon.app.main``)."""

from __future__ import annotations

from rpcd.daemon.app import main

if __name__ == "__main__":
    raise SystemExit(main())
