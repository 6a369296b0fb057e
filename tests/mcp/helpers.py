"""Configs for the test servers: the Python fault server (``fault_server.py``) and the npm servers
(``npm_servers.py``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rpcd.mcp.config import ServerConfig

FAULT_SERVER = Path(__file__).resolve().parent / "fault_server.py"


def fault_config(name: str = "faults", mode: str = "serve", *, pid_file: Path | None = None,
                 request_timeout: float = 30.0, startup_timeout: float = 30.0, **extra: Any) -> ServerConfig:
    """The fault server run by this interpreter (``-I``: no project directory on ``sys.path``)."""
    args = ["-I", str(FAULT_SERVER), mode]
    if pid_file is not None:
        args += ["--pid-file", str(pid_file)]
    return ServerConfig(name=name, transport="stdio", command=sys.executable, args=tuple(args),
                        request_timeout=request_timeout, startup_timeout=startup_timeout, source="test", **extra)


def fault_entry(mode: str = "serve", **extra: Any) -> dict[str, Any]:
    """The fault server as an ``mcp.json`` entry."""
    return {"command": sys.executable, "args": ["-I", str(FAULT_SERVER), mode], **extra}
