"""Structured logging: one JSON object per line on stderr, every string redacted.

stdout carries protocol only, so every log goes to stderr; a client that reads stderr
line by line can parse each line on its own. pygls logs every outgoing body at INFO
(transcript text!), so its logger is held at WARNING whatever our level is.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
import traceback
from typing import Any, Final, TextIO

from rpcd.core.redact import Redactor, default_redactor

ENV_LEVEL: Final = "RPCD_LOG_LEVEL"
DEFAULT_LEVEL: Final = "info"
LEVELS: Final = ("debug", "info", "warning", "error", "critical")
_STANDARD_ATTRS: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "msg", ...extra}`` on one line; an exception as its type and the
    frames of its traceback, plus its (redacted) text only when the log level is debug."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self._redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        redactor = self._redactor or default_redactor()
        entry: dict[str, Any] = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": redactor.redact(record.getMessage()),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                entry[key] = redactor.redact_value(value)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            entry["excType"] = type(exc).__name__
            if logging.getLogger().isEnabledFor(logging.DEBUG):
                # An exception's text may quote transcript content; only a debug log carries it.
                entry["exc"] = redactor.redact(str(exc))
                entry["trace"] = redactor.redact("".join(traceback.format_exception(exc)))
            else:
                frames = traceback.TracebackException.from_exception(exc).stack.format()
                entry["trace"] = redactor.redact("".join(frames))  # where it failed, not what it said
        return json.dumps(entry, default=str, ensure_ascii=False)


def resolve_level(flag: str | None = None) -> int:
    """``--log-level`` wins over ``RPCD_LOG_LEVEL``; unknown names fall back to info."""
    name = (flag or os.environ.get(ENV_LEVEL) or DEFAULT_LEVEL).strip().lower()
    if name == "warn":
        name = "warning"
    return int(logging.getLevelName(name.upper())) if name in LEVELS else logging.INFO


def configure_logging(level: str | None = None, stream: TextIO | None = None) -> None:
    """Install the JSON handler on the root logger (idempotent: replaces an earlier one)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_rpcd", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._rpcd = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(resolve_level(level))
    logging.getLogger("pygls").setLevel(max(logging.WARNING, root.level))
