"""Where Pi keeps session files, and how to create directories and files privately.

Transcripts can hold secrets, so every directory we create is 0700 and every file 0600
(umask can only narrow these). Directory names follow Pi exactly so that Pi and rpcd
see the same sessions for the same project.
"""

from __future__ import annotations

import os
import re
import urllib.parse

_ENCODE_RE = re.compile(r"[/\\:]")

SESSION_DIR_ENV = "PI_CODING_AGENT_SESSION_DIR"
"""Pi's environment override of where session files live (below ``--session-dir``)."""


def get_agent_dir() -> str:
    """``PI_CODING_AGENT_DIR`` (``~`` expanded) else ``~/.pi/agent``."""
    configured = os.environ.get("PI_CODING_AGENT_DIR")
    if configured:
        return os.path.expanduser(configured)
    return os.path.join(os.path.expanduser("~"), ".pi", "agent")


def expand_path(value: str, base: str) -> str:
    """A configured path as Pi's ``normalizePath`` reads it (``~`` and ``~/x`` are the home directory,
    a ``file://`` URL is its path), made absolute against ``base`` (Pi: relative to the process cwd,
    i.e. the directory Pi was started in; for the daemon, the startup cwd)."""
    if value == "~":
        value = os.path.expanduser("~")
    elif value.startswith("~/"):
        value = os.path.join(os.path.expanduser("~"), value[2:])
    elif value.startswith("file://"):
        from urllib.request import url2pathname  # a file:// setting only (pulls in http.client, email)

        value = url2pathname(urllib.parse.urlparse(value).path)
    return os.path.normpath(os.path.join(base, value))


def encode_cwd(cwd: str) -> str:
    """``/home/u/proj`` -> ``--home-u-proj--`` (one leading separator dropped, ``/ \\ :`` -> ``-``)."""
    stripped = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return f"--{_ENCODE_RE.sub('-', stripped)}--"


def default_session_dir(cwd: str, agent_dir: str | None = None) -> str:
    """``<agentDir>/sessions/--<enc>--/``, created (0700) when computed, as Pi does."""
    base = agent_dir if agent_dir is not None else get_agent_dir()
    directory = os.path.join(base, "sessions", encode_cwd(os.path.abspath(cwd)))
    make_private_dirs(directory)
    return directory


def make_private_dirs(directory: str) -> None:
    """``mkdir -p`` where every component we create gets 0700 (``os.makedirs`` only sets the leaf)."""
    directory = os.path.abspath(directory)
    missing: list[str] = []
    current = directory
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            if not os.path.isdir(path):
                raise
