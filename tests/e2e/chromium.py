"""A headless Chromium for opening exported pages, driven over the DevTools protocol on a pipe.

Where Chromium comes from: the machine's own ``chromium`` if there is one; else Debian's
``chromium`` package fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x`` (no root
needed, nothing installed system-wide) into ``~/.cache/rpcd/chromium`` once per machine, with the
shared libraries it lacks fetched the same way (found with ``ldd``, their packages among the
unpacked packages' dependencies); as root, ``apt-get install chromium`` when that does not work.
Without any of it the caller skips with the reason.

The protocol runs over ``--remote-debugging-pipe`` (fd 3 in, fd 4 out, NUL-separated JSON), so no
port is opened and no websocket library is needed. ``Page`` collects what the page did: console
messages, uncaught exceptions, log entries and every network request.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import attrs

from tests.pi_compat.oracle import _exclusive, oracle_dir

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
)
ROUNDS = 6
_MISSING = re.compile(r"^\s*(\S+) => not found", re.MULTILINE)


class ChromiumUnavailable(Exception):
    pass


@attrs.frozen
class Chromium:
    binary: str
    library_path: str = ""

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DBUS")}
        if self.library_path:
            env["LD_LIBRARY_PATH"] = self.library_path + os.pathsep + env.get("LD_LIBRARY_PATH", "")
        return env


def cache_dir() -> Path:
    return oracle_dir().parent / "chromium"


@cache
def ensure_chromium(timeout: float = 900.0) -> Chromium:
    """A runnable Chromium, or ``ChromiumUnavailable`` saying why there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found and _runs(Chromium(found)):
            return Chromium(found)
    root = cache_dir()
    unpacked = _unpacked(root)
    if unpacked is not None and _runs(unpacked):
        return unpacked
    problems: list[str] = []
    apt_get, dpkg_deb, apt_cache = shutil.which("apt-get"), shutil.which("dpkg-deb"), shutil.which("apt-cache")
    if apt_get and dpkg_deb and apt_cache:
        root.mkdir(parents=True, exist_ok=True)
        try:
            with _exclusive(root.parent / ".chromium.lock", timeout):
                unpacked = _unpacked(root)
                if unpacked is None or not _runs(unpacked):
                    unpacked = _download(root, apt_get, dpkg_deb, apt_cache, timeout)
                if _runs(unpacked):
                    return unpacked
                problems.append("the unpacked chromium does not start")
        except (OSError, subprocess.SubprocessError, ValueError, ChromiumUnavailable) as exc:
            problems.append(f"apt-get download: {exc}")
    else:
        problems.append("no apt-get/dpkg-deb to fetch Debian's chromium")
    if os.geteuid() == 0 and apt_get:
        try:
            subprocess.run([apt_get, "install", "-y", "--no-install-recommends", "chromium"], capture_output=True,
                           timeout=timeout, check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            found = shutil.which("chromium")
            if found and _runs(Chromium(found)):
                return Chromium(found)
            problems.append("apt-get install chromium: installed but does not start")
        except (OSError, subprocess.SubprocessError) as exc:
            problems.append(f"apt-get install chromium: {exc}")
    raise ChromiumUnavailable("; ".join(problems))


def _unpacked(root: Path) -> Chromium | None:
    binary = root / "usr" / "lib" / "chromium" / "chromium"
    if not binary.is_file():
        return None
    return Chromium(str(binary), _library_path(root))


def _library_path(root: Path) -> str:
    dirs = sorted({str(p.parent) for p in root.rglob("*.so*") if p.is_file()})
    return os.pathsep.join(dirs)


def _runs(chromium: Chromium) -> bool:
    try:
        done = subprocess.run([chromium.binary, "--headless", "--no-sandbox", "--version"], capture_output=True,
                              timeout=60, env=chromium.env())
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and b"Chrom" in done.stdout + done.stderr


def _download(root: Path, apt_get: str, dpkg_deb: str, apt_cache: str, timeout: float) -> Chromium:
    """chromium + chromium-common, then, round by round, the packages of the libraries ``ldd`` misses."""
    fetched: set[str] = set()
    wanted = {"chromium", "chromium-common"}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(ROUNDS):
            new = sorted(wanted - fetched)
            if new:
                subprocess.run([apt_get, "download", *new], cwd=scratch, capture_output=True, timeout=timeout,
                               check=True)
                for deb in Path(scratch).glob("*.deb"):
                    subprocess.run([dpkg_deb, "-x", str(deb), str(root)], capture_output=True, timeout=timeout,
                                   check=True)
                    deb.unlink()
                fetched |= set(new)
            chromium = _unpacked(root)
            if chromium is None:
                raise ChromiumUnavailable("the chromium package has no usr/lib/chromium/chromium")
            missing = _missing_libraries(root, chromium.library_path)
            if not missing:
                return chromium
            candidates = _dependencies(apt_cache, fetched, timeout)
            wanted |= {pkg for soname in missing for pkg in candidates if _provides(pkg, soname)}
            if wanted <= fetched:
                raise ChromiumUnavailable(f"no package found for {', '.join(sorted(missing))}")
    raise ChromiumUnavailable("shared libraries still missing after several rounds")


def _missing_libraries(root: Path, library_path: str) -> set[str]:
    env = {**os.environ, "LD_LIBRARY_PATH": library_path}
    missing: set[str] = set()
    binaries = [root / "usr" / "lib" / "chromium" / "chromium", *(p for p in root.rglob("*.so*") if p.is_file())]
    for binary in binaries:
        done = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, env=env, timeout=60)
        missing |= set(_MISSING.findall(done.stdout))
    return missing


def _dependencies(apt_cache: str, packages: set[str], timeout: float) -> set[str]:
    done = subprocess.run([apt_cache, "depends", "--no-recommends", "--no-suggests", "--no-conflicts",
                           "--no-breaks", "--no-replaces", "--no-enhances", *sorted(packages)],
                          capture_output=True, text=True, timeout=timeout)
    return {m.group(1) for m in re.finditer(r"Depends: ([a-z0-9][a-z0-9.+-]*)$", done.stdout, re.MULTILINE)}


def _provides(package: str, soname: str) -> bool:
    """Debian's library naming: ``libFLAC.so.12`` is in ``libflac12``, ``libopenh264.so.7`` in
    ``libopenh264-7``, ``libvorbis.so.0`` in ``libvorbis0a``."""
    stem, _, version = soname.partition(".so.")
    stem = stem.lower().replace("_", "-")
    version = version.split(".")[0]
    expected = f"{stem}-{version}" if stem[-1:].isdigit() else f"{stem}{version}"
    return package == expected or (package.startswith(expected) and package[len(expected):].isalpha())


# -- the DevTools protocol over a pipe -------------------------------------------------------------


def _above_four(fds: tuple[int, int]) -> tuple[int, int]:
    """The pipe's ends moved above fd 4, so that wiring them to 3 and 4 cannot close one of them."""
    import fcntl

    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds)
    for fd in fds:
        os.close(fd)
    return moved[0], moved[1]


class Browser:
    """One headless Chromium process; ``open(url)`` loads a page in a fresh tab."""

    def __init__(self, chromium: Chromium, profile: str, width: int = 1280, height: int = 900) -> None:
        self.width, self.height = width, height
        to_chrome_r, self._to_chrome = _above_four(os.pipe())
        self._from_chrome, from_chrome_w = _above_four(os.pipe())
        # The protocol's fds are 3 (commands in) and 4 (replies out): the shell puts the pipes there.
        wiring = f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} {to_chrome_r}<&- {from_chrome_w}>&-'
        shell = shutil.which("bash") or "/bin/bash"  # dash's redirections take single-digit fds only
        self.proc = subprocess.Popen(
            [shell, "-c", wiring, chromium.binary, *FLAGS, f"--user-data-dir={profile}",
             "--remote-debugging-pipe", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=chromium.env(),
            pass_fds=(to_chrome_r, from_chrome_w), start_new_session=True,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._ids = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 60.0) -> dict[str, Any]:
        self._ids += 1
        message: dict[str, Any] = {"id": self._ids, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline)
            if reply.get("id") == self._ids:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_event(self, method: str, session: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method and event.get("sessionId") == session:
                return event
        while True:
            event = self._next(deadline)
            self.events.append(event)
            if event.get("method") == method and event.get("sessionId") == session:
                return event

    def _next(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("chromium did not answer")
            ready, _, _ = select.select([self._from_chrome], [], [], remaining)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the protocol pipe")
                self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def open(self, url: str) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        mark = len(self.events)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session)
        return Page(self, session, mark)

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.send("Browser.close", timeout=10)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)


class Page:
    def __init__(self, browser: Browser, session: str, mark: int) -> None:
        self.browser, self.session, self._mark = browser, session, mark

    def evaluate(self, expression: str) -> Any:
        result = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                   session=self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluation failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, box: dict[str, float] | None = None) -> bytes:
        """A PNG of ``box`` (page coordinates), or of the whole page beyond the viewport."""
        if box is None:
            metrics = self.browser.send("Page.getLayoutMetrics", session=self.session)
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            box = {"x": 0, "y": 0, "width": size["width"], "height": size["height"]}
        clip = {**{k: box[k] for k in ("x", "y", "width", "height")}, "scale": 1}
        shot = self.browser.send("Page.captureScreenshot",
                                 {"format": "png", "captureBeyondViewport": True, "clip": clip}, session=self.session)
        return base64.b64decode(shot["data"])

    def _events(self, *methods: str) -> list[dict[str, Any]]:
        return [e for e in self.browser.events[self._mark:]
                if e.get("sessionId") == self.session and e.get("method") in methods]

    def console_problems(self) -> list[str]:
        """Console errors/warnings, uncaught exceptions and error log entries (CSP reports included)."""
        out = [json.dumps(e["params"]) for e in self._events("Runtime.exceptionThrown")]
        out += [json.dumps(e["params"]) for e in self._events("Runtime.consoleAPICalled")
                if e["params"].get("type") in ("error", "warning", "assert")]
        out += [json.dumps(e["params"]) for e in self._events("Log.entryAdded")
                if e["params"]["entry"].get("level") in ("error", "warning")]
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self._events("Network.requestWillBeSent")]


@contextlib.contextmanager
def browser(chromium: Chromium) -> Iterator[Browser]:
    with tempfile.TemporaryDirectory(prefix="rpcd-chromium-profile-") as profile:
        opened = Browser(chromium, profile)
        try:
            yield opened
        finally:
            opened.close()


# -- PNG, read with the standard library ---------------------------------------------------------------


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """8-bit RGB/RGBA PNG -> ``(width, height, rows of RGB bytes)`` (what Chromium's screenshots are)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, color type {color}, interlace {interlace})")
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        previous = line
        rows.append(bytes(line) if channels == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3))
    return width, height, rows


def ink(png: bytes, margin: int = 4) -> int:
    """How many pixels of a screenshot differ clearly from its own background (its most common
    colour), ``margin`` pixels of border left out: drawn text and images are ink, an empty box has none."""
    width, height, rows = decode_png(png)
    counts: dict[bytes, int] = {}
    pixels: list[bytes] = []
    for y in range(margin, height - margin):
        row = rows[y]
        for x in range(margin, width - margin):
            pixel = row[3 * x:3 * x + 3]
            pixels.append(pixel)
            counts[pixel] = counts.get(pixel, 0) + 1
    if not pixels:
        return 0
    background = max(counts, key=counts.__getitem__)
    return sum(1 for p in pixels if sum(abs(a - b) for a, b in zip(p, background, strict=True)) > 120)


def dominant_colour(png: bytes) -> tuple[int, int, int]:
    """The most common colour of a screenshot (an image drawn over the whole clip is its colour)."""
    _, _, rows = decode_png(png)
    counts: dict[bytes, int] = {}
    for row in rows:
        for x in range(0, len(row), 3):
            pixel = row[x:x + 3]
            counts[pixel] = counts.get(pixel, 0) + 1
    best = max(counts, key=counts.__getitem__)
    return best[0], best[1], best[2]
