"""``python -m clients``: the rpcctl CLI (``python -m clients demo`` runs the demo)."""

from clients.cli import main

raise SystemExit(main())
