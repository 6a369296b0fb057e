"""``python -m rpcd.clients``: the rpcctl CLI (``python -m rpcd.clients demo`` runs the demo)."""

from rpcd.clients.cli import main

raise SystemExit(main())
