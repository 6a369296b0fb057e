"""Bundled clients: a Python library + CLI (no pygls import) and a Node editor-side package.

The public Python API (everything else is an implementation detail)::

    from rpcd.clients import RpcdClient, SyncClient, spawn, RpcError, DaemonDied

``RpcdClient`` (asyncio) and ``SyncClient`` (blocking, generated from it) talk to one daemon;
``spawn`` is ``async with`` sugar; the exceptions all derive from ``ClientError``. The result
shapes are ``TypedDict``s in ``rpcd.clients.types``. The library never prints: what it
swallows is logged on the ``rpcd.clients`` logger.
"""

from rpcd.clients.client import EventStream, RpcdClient, spawn
from rpcd.clients.errors import (
    ClientError,
    ConnectionClosed,
    DaemonDied,
    ProtocolViolation,
    RpcError,
    RpcTimeout,
)
from rpcd.clients.sync import SyncClient

__all__ = [
    "ClientError",
    "ConnectionClosed",
    "DaemonDied",
    "EventStream",
    "ProtocolViolation",
    "RpcError",
    "RpcTimeout",
    "RpcdClient",
    "SyncClient",
    "spawn",
]
