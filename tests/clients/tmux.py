"""A private tmux server for driving ``rpcctl chat`` through a real terminal.

tmux comes from ``PATH``; without it, Debian's package (and the libraries it needs) is fetched
without root — ``apt-get download`` + ``dpkg-deb -x`` into ``~/.cache/rpcd/tmux`` — once. If that
is impossible too, :func:`ensure_tmux` names the reason and the test skips with it.

Every server runs on its own socket (``-S``) in the test's directory, so nothing here touches
anyone else's tmux; :meth:`Tmux.close` ends only that server.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

CACHE = Path(os.environ.get("RPCD_TMUX_DIR", Path.home() / ".cache" / "rpcd" / "tmux"))
WAIT_S = 60.0


class TmuxUnavailable(Exception):
    pass


def ensure_tmux() -> tuple[str, dict[str, str]]:
    """The tmux binary and the environment it needs (``LD_LIBRARY_PATH`` for a fetched one)."""
    found = shutil.which("tmux")
    if found:
        return found, {}
    binary = CACHE / "usr" / "bin" / "tmux"
    if binary.exists():
        return str(binary), _library_env()
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb") and shutil.which("apt-cache")):
        raise TmuxUnavailable("tmux is not installed and apt-get/dpkg-deb are not available to fetch it")
    download = CACHE / "debs"
    download.mkdir(parents=True, exist_ok=True)
    try:
        depends = subprocess.run(["apt-cache", "depends", "--no-recommends", "--no-suggests", "tmux"],
                                 capture_output=True, text=True, check=True, timeout=120).stdout
        packages = ["tmux", *re.findall(r"^\s+Depends: ([\w.+-]+)$", depends, re.MULTILINE)]
        # the C library is the system's own (a second one on LD_LIBRARY_PATH would not match its loader)
        libraries = [p for p in packages if p == "tmux" or (p.startswith("lib") and p != "libc6")]
        subprocess.run(["apt-get", "download", *libraries], cwd=download, capture_output=True, check=True,
                       timeout=300)
        for deb in download.glob("*.deb"):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(CACHE)], check=True, capture_output=True, timeout=120)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        raise TmuxUnavailable(f"tmux is not installed and fetching Debian's package failed: {exc}") from exc
    if not binary.exists():
        raise TmuxUnavailable("fetched Debian's tmux package but it holds no usr/bin/tmux")
    return str(binary), _library_env()


def _library_env() -> dict[str, str]:
    directories = [p for base in (CACHE / "usr" / "lib", CACHE / "lib") for p in [base, *base.glob("*-linux-gnu")]
                   if p.is_dir()]
    return {"LD_LIBRARY_PATH": ":".join(str(p) for p in directories)}


class Tmux:
    """One detached session on a private server, running ``command``."""

    def __init__(self, directory: Path, command: Sequence[str], *, env: Mapping[str, str],
                 width: int = 200, height: int = 60) -> None:
        self.binary, extra = ensure_tmux()
        self.socket = str(directory / "tmux.sock")
        self.env = {**os.environ, **extra}
        shell_command = " ".join(_quote(part) for part in command)
        exports = " ".join(f"{k}={_quote(v)}" for k, v in env.items())
        # COLUMNS/LINES of whoever runs the tests would override the pane's size (rich reads them)
        self._run("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height),
                  f"env -u COLUMNS -u LINES {exports} {shell_command}; echo '[exited '$?']'; sleep 600")

    def _run(self, *args: str) -> str:
        done = subprocess.run([self.binary, "-S", self.socket, *args], capture_output=True, text=True,
                              env=self.env, check=True, timeout=30)
        return done.stdout

    def send(self, *keys: str) -> None:
        self._run("send-keys", "-t", "t", *keys)

    def type_line(self, text: str) -> None:
        self.send("-l", text)
        self.send("Enter")

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-J", "-S", "-200", "-t", "t")

    def wait_for(self, pattern: str, *, count: int = 1, timeout: float = WAIT_S) -> str:
        """Wait until ``pattern`` (a regex) appears ``count`` times on the screen; return the screen."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if len(re.findall(pattern, text, re.MULTILINE)) >= count:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} (x{count}) never appeared; the screen:\n{text}")
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run([self.binary, "-S", self.socket, "kill-server"], capture_output=True, env=self.env,
                       check=False, timeout=30)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
