"""Where the extension host's Node and its npm packages come from — explicit, and offline once set up.

* **Node** ≥ 22.19 (what Pi 0.85.0 needs): ``$RPCD_NODE`` when set (a path to a ``node``
  executable), else the ``node`` on ``PATH``. One that is missing or too old is not used: the
  reason (and what to do) is what every TypeScript extension's diagnostic says.
* **The host's packages** (Pi 0.85.0's ``@earendil-works/*`` and ``jiti``) are pinned by the
  ``package.json`` + ``package-lock.json`` that ship inside rpcd (this directory) and installed with
  ``npm ci`` into ``<cache>/extension-host-<lock digest>/`` on first use (``<cache>``:
  ``$RPCD_EXTENSION_HOST_DIR``, else ``$XDG_CACHE_HOME/rpcd``, else ``~/.cache/rpcd``); a stamp file
  says it is complete, an ``flock`` keeps two processes from installing at once. npm is the
  ``npmCommand`` setting when given (as Pi runs it), else ``npm`` on ``PATH``. ``rpcd extensions
  setup`` does all of it ahead of time and says what it did; after that no network is needed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import attrs

__all__ = [
    "HOST_FILES",
    "MIN_NODE",
    "HostInstall",
    "NodeUnavailable",
    "ensure_host_packages",
    "find_node",
    "host_dir",
]

MIN_NODE = (22, 19, 0)
"""Pi 0.85.0's ``engines.node`` (``>=22.19.0``)."""
NODE_VARIABLE = "RPCD_NODE"
CACHE_VARIABLE = "RPCD_EXTENSION_HOST_DIR"
HOST_FILES = ("host.mjs", "reader.mjs")
LOCK_FILES = ("package.json", "package-lock.json")
STAMP = "rpcd-installed.json"
INSTALL_TIMEOUT_S = float(os.environ.get("RPCD_NPM_TIMEOUT", "900"))
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


class NodeUnavailable(Exception):
    """No Node can host extensions here (or its packages cannot be installed): ``reason`` says why
    and what to do, in words a user can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@attrs.frozen
class NodeFound:
    path: str
    version: str


def _version(text: str) -> tuple[int, int, int] | None:
    match = _VERSION.match(text.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _wanted() -> str:
    return ".".join(map(str, MIN_NODE))


def find_node(env: os._Environ[str] | dict[str, str] | None = None) -> NodeFound:
    """The Node that hosts extensions, or :class:`NodeUnavailable` saying why not."""
    environ = os.environ if env is None else env
    configured = environ.get(NODE_VARIABLE)
    if configured:
        candidate: str | None = os.path.expanduser(configured)
        where = f"${NODE_VARIABLE}={configured}"
        assert candidate is not None
        if not os.path.isfile(candidate) or not os.access(candidate, os.X_OK):
            raise NodeUnavailable(f"{where} is not an executable file; point it at a Node >= {_wanted()}")
    else:
        candidate = shutil.which("node", path=environ.get("PATH"))
        where = "the node on PATH"
        if candidate is None:
            raise NodeUnavailable(f"TypeScript/JavaScript extensions need Node >= {_wanted()}, and no node is on PATH: "
                                  f"install Node {MIN_NODE[0]} or set {NODE_VARIABLE}=/path/to/node, then run "
                                  "`rpcd extensions setup`")
    assert candidate is not None
    try:
        done = subprocess.run([candidate, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NodeUnavailable(f"{where} ({candidate}) does not run: {exc}") from None
    version = _version(done.stdout)
    if done.returncode != 0 or version is None:
        raise NodeUnavailable(f"{where} ({candidate}) does not say its version")
    if version < MIN_NODE:
        raise NodeUnavailable(f"TypeScript/JavaScript extensions need Node >= {_wanted()}; {where} ({candidate}) "
                              f"is {done.stdout.strip()}: install Node {MIN_NODE[0]} or set "
                              f"{NODE_VARIABLE}=/path/to/node, then run `rpcd extensions setup`")
    return NodeFound(candidate, done.stdout.strip())


# -- the host's packages ---------------------------------------------------------------------------------


def _package_files() -> dict[str, bytes]:
    root = resources.files(__package__ or "rpcd.runtime.extensions.node")
    return {name: root.joinpath(name).read_bytes() for name in (*LOCK_FILES, *HOST_FILES)}


def lock_digest(files: dict[str, bytes] | None = None) -> str:
    """What the installed packages depend on: the manifest and the lockfile (not the host's code)."""
    files = files if files is not None else _package_files()
    digest = hashlib.sha256()
    for name in LOCK_FILES:
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    return digest.hexdigest()[:16]


def cache_root(env: os._Environ[str] | dict[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    configured = environ.get(CACHE_VARIABLE)
    if configured:
        return Path(os.path.expanduser(configured))
    xdg = environ.get("XDG_CACHE_HOME")
    base = Path(os.path.expanduser(xdg)) if xdg else Path.home() / ".cache"
    return base / "rpcd"


def host_dir(env: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """Where the host's packages are (or will be) installed."""
    return cache_root(env) / f"extension-host-{lock_digest()}"


@attrs.frozen
class HostInstall:
    """A ready host directory: ``host.mjs`` beside its ``node_modules``."""

    directory: Path
    installed_now: bool
    """``npm ci`` ran for this call (the first use, or ``rpcd extensions setup``)."""
    seconds: float = 0.0

    @property
    def script(self) -> Path:
        return self.directory / "host.mjs"


@contextmanager
def _exclusive(lock: Path, timeout: float) -> Iterator[None]:
    with open(lock, "a+") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise NodeUnavailable(f"another process has been installing the extension host's packages into "
                                          f"{lock.parent} for {timeout:.0f} s") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stamp_ok(directory: Path, digest: str) -> bool:
    try:
        stamp = json.loads((directory / STAMP).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("lock") == digest and (directory / "node_modules").is_dir()


def _write_host_files(directory: Path, files: dict[str, bytes]) -> None:
    """The host's own code, refreshed when it differs (it is not part of the lock digest)."""
    for name in HOST_FILES:
        target = directory / name
        try:
            if target.read_bytes() == files[name]:
                continue
        except OSError:
            pass
        temporary = target.with_name(f".{name}.{os.getpid()}")
        temporary.write_bytes(files[name])
        os.replace(temporary, target)


def ensure_host_packages(npm_command: Sequence[str] | None = None, *, env: dict[str, str] | None = None,
                         offline: bool = False, timeout: float = INSTALL_TIMEOUT_S) -> HostInstall:
    """The host directory with its packages installed (``npm ci`` the first time), or
    :class:`NodeUnavailable` saying why it cannot be had."""
    files = _package_files()
    digest = lock_digest(files)
    directory = host_dir(env)
    if _stamp_ok(directory, digest):
        _write_host_files(directory, files)
        return HostInstall(directory, installed_now=False)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NodeUnavailable(f"cannot create {directory} for the extension host: {exc.strerror or exc}") from None
    with _exclusive(directory.parent / f".{directory.name}.lock", timeout):
        if _stamp_ok(directory, digest):
            _write_host_files(directory, files)
            return HostInstall(directory, installed_now=False)
        for name in LOCK_FILES:
            (directory / name).write_bytes(files[name])
        _write_host_files(directory, files)
        started = time.monotonic()
        _npm_ci(directory, npm_command, env, offline, timeout)
        seconds = time.monotonic() - started
        (directory / STAMP).write_text(json.dumps({"lock": digest, "installedIn": round(seconds, 1)}))
    return HostInstall(directory, installed_now=True, seconds=seconds)


def npm_argv(npm_command: Sequence[str] | None, env: dict[str, str] | None = None) -> list[str]:
    """Pi's ``getNpmCommand``: the ``npmCommand`` setting (a command and its arguments), else ``npm``."""
    if npm_command:
        return list(npm_command)
    found = shutil.which("npm", path=(env or os.environ).get("PATH"))
    if found is None:
        raise NodeUnavailable("npm is not on PATH (it installs the extension host's packages once): install npm or "
                              "set the npmCommand setting, then run `rpcd extensions setup`")
    return [found]


def _npm_ci(directory: Path, npm_command: Sequence[str] | None, env: dict[str, str] | None, offline: bool,
            timeout: float) -> None:
    command = [*npm_argv(npm_command, env), "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error",
               "--offline" if offline else "--prefer-offline"]
    environ = {**(env or os.environ), "npm_config_update_notifier": "false"}
    try:
        done = subprocess.run(command, cwd=directory, env=environ, capture_output=True, text=True, timeout=timeout,
                              check=False, start_new_session=True)
    except subprocess.TimeoutExpired:
        raise NodeUnavailable(f"npm ci of the extension host's packages did not finish within {timeout:.0f} s "
                              "(no registry?); run `rpcd extensions setup` once online") from None
    except OSError as exc:
        raise NodeUnavailable(f"npm could not be run ({command[0]}): {exc.strerror or exc}") from None
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr + "\n" + done.stdout).splitlines() if line.strip()]
        first = next((line for line in lines if "ERR" in line), lines[0] if lines else f"exit {done.returncode}")
        raise NodeUnavailable(f"npm ci of the extension host's packages into {directory} failed ({first[:300]}); run "
                              "`rpcd extensions setup` once the npm registry can be reached")
