"""Failures a client caller can catch, each carrying what a human needs to act on it.

The daemon reports one flat list of failures per error (`data.errors`, primary first,
cleanup failures after it in occurrence order); ``RpcError`` keeps that list as-is so a
script can print or inspect every item, not just the first one. Transport-level trouble
(the daemon died, wrote garbage, or did not answer in time) gets its own classes so the
CLI can map each to a distinct exit code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rpcd.protocol.names import error_name


class ClientError(Exception):
    """Base of everything this package raises on purpose."""


class RpcError(ClientError):
    """The daemon answered a request with a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None, *, method: str | None = None) -> None:
        super().__init__(f"{message} ({self._name(code)} {code})")
        self.code = code
        self.message = message
        self.data = data
        self.method = method

    @staticmethod
    def _name(code: int) -> str:
        return error_name(code)

    @property
    def name(self) -> str:
        """Symbolic name of ``code`` (``HOST_UNAVAILABLE``...), ``ERROR`` when unknown."""
        return self._name(self.code)

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The flat failure list: ``errors[0]`` is the primary failure, the rest cleanup failures."""
        items = self.data.get("errors") if isinstance(self.data, Mapping) else None
        if not isinstance(items, Sequence) or isinstance(items, str | bytes):
            return []
        return [dict(item) if isinstance(item, Mapping) else {"message": str(item)} for item in items]

    @property
    def terminal(self) -> bool:
        """True when the daemon's host is unusable from now on (restart the daemon)."""
        return isinstance(self.data, Mapping) and bool(self.data.get("terminal"))

    @property
    def operation(self) -> str | None:
        value = self.data.get("operation") if isinstance(self.data, Mapping) else None
        return value if isinstance(value, str) else None

    @property
    def phase(self) -> str | None:
        value = self.data.get("phase") if isinstance(self.data, Mapping) else None
        return value if isinstance(value, str) else None

    def describe(self) -> str:
        """A multi-line, human-readable report: the error line, where it happened, every failure."""
        lines = [f"error: {self.message} [{self.name} {self.code}]"]
        where = [f"operation={self.operation}"] if self.operation else []
        if self.phase:
            where.append(f"phase={self.phase}")
        target = self.data.get("target") if isinstance(self.data, Mapping) else None
        if isinstance(target, Mapping):
            where += [f"{key}={value}" for key, value in target.items()]
        if where:
            lines.append("  " + " ".join(where))
        if self.terminal:
            lines.append("  the daemon's host is terminal: restart it to continue")
        for index, item in enumerate(self.errors):
            label = "primary" if index == 0 else "cleanup"
            code = f" ({item['code']})" if "code" in item else ""
            extra = "".join(f"\n      {k}: {v}" for k, v in item.items() if k not in ("type", "message", "code"))
            lines.append(f"  {index + 1}. [{label}] {item.get('type', '?')}{code}: {item.get('message', '')}{extra}")
        return "\n".join(lines)


class ConnectionClosed(ClientError):
    """The connection is closed (by us or by the peer); no more requests can be sent."""


class DaemonDied(ConnectionClosed):
    """The daemon exited or closed its stdout while requests were pending (or before one was sent)."""

    def __init__(self, reason: str, *, returncode: int | None = None, stderr_tail: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.returncode = returncode
        self.stderr_tail = list(stderr_tail)

    def __str__(self) -> str:  # the exit status may be learnt after construction
        return self.reason + (f" (exit status {self.returncode})" if self.returncode is not None else "")

    def describe(self) -> str:
        lines = [f"error: daemon died: {self}"]
        if self.stderr_tail:
            lines.append("  last lines of the daemon's stderr:")
            lines += [f"    {line}" for line in self.stderr_tail]
        return "\n".join(lines)


class ProtocolViolation(DaemonDied):
    """The peer wrote too much that is not JSON-RPC (or an oversized frame); we gave up on it."""


class RpcTimeout(ClientError, TimeoutError):
    """No answer within the per-request timeout; the request was cancelled with ``$/cancelRequest``."""

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(f"no answer to {method} within {timeout:g}s")
        self.method = method
        self.timeout = timeout
