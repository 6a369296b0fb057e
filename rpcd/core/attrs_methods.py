"""The bytecode of the methods attrs writes for each class, kept like ``.pyc`` files are.

attrs builds every class's ``__init__``, ``__eq__``, ``__hash__``, ``__repr__`` … as Python source and
compiles it when the class statement runs: ~0.23 ms of ``compile`` per class, 50 ms of the ~250 ms
from a daemon's spawn to its first answer (220 classes; ``scripts/bench --vs-pi spawn``). The source
of a class's methods depends only on the class (its fields and options) and the attrs version, so
its compiled code can be kept and reused, exactly as the interpreter keeps a module's in
``__pycache__``.

``install()`` (called by the entry point, ``rpcd.__main__``, before anything defines an attrs class)
loads the cache file and routes attrs' one compile step (``attr._make._compile_and_eval``) through
it: a script seen before is not compiled again, a new one is compiled and remembered. The key is a
digest of the script (BLAKE2b, 160 bits) with the file name attrs gives it, so a changed class or a
changed attrs is never answered with other code; the file holds nothing but the interpreter's own
``marshal`` form behind its bytecode magic number (another Python ignores it), each entry loaded only
when its class is defined.

Where: beside rpcd's own bytecode (``rpcd/__pycache__/``, or under ``sys.pycache_prefix``), never in
a project directory — the same trust as the package's ``.pyc`` files. Written at exit when something
new was compiled and the interpreter may write bytecode (``sys.dont_write_bytecode`` is honoured, as
for ``.pyc``), atomically (a temporary file renamed over); ``python -m rpcd.core.attrs_methods``
builds it for every rpcd module regardless (what ``scripts/_venv.sh`` runs after ``compileall``,
since many containers set ``PYTHONDONTWRITEBYTECODE``). A missing, unreadable or foreign file only
means compiling as attrs always did; so does an attrs without that compile step (the hook is then
not installed, and ``tests/core/test_attrs_methods.py`` fails to say so).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import marshal
import os
import re
import sys
from pathlib import Path
from types import CodeType
from typing import Any, Final

try:  # BLAKE2 without OpenSSL's hashlib backend (~2 ms of a start-up that may not need it otherwise)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter without the builtin module
    from hashlib import blake2b

_KEEP_AT_MOST: Final = 4_000
"""Entries kept from an earlier file beside this process's own (an old checkout's classes are
dropped once the file would grow past it)."""


_SALT: Final = re.compile(r" return hash\(\(\s*(-?\d+),")
"""The salt attrs writes first into the tuple ``__hash__`` hashes (``hash((<salt>, self.a, …))``), on an
indented line of the method's body. The pattern starts with its literal, which ``re`` looks for with
a fast search (a ``\\b`` first made it test every position: 6 ms of a start-up's 163 scripts)."""
_PLACEHOLDER: Final = 0x5A17_5A17_5A17_5A17
"""What the salt is kept as (no other constant of attrs' scripts)."""


def _with_constant(code: CodeType, placeholder: int, value: int) -> CodeType:
    """``code`` with ``placeholder`` replaced by ``value`` in it and in the functions it defines."""
    consts = tuple(
        value if type(c) is int and c == placeholder else _with_constant(c, placeholder, value)
        if isinstance(c, CodeType) else c
        for c in code.co_consts
    )
    return code.replace(co_consts=consts) if consts != code.co_consts else code


class _Codes:
    """The cache of one process: what the file held (each entry still in ``marshal`` form, loaded on
    use), and what this process compiled or reused."""

    def __init__(self, path: Path | None, modules: tuple[str, ...]) -> None:
        self.path = path
        # attrs names a class's methods ``<attrs generated methods module.Class>``: only the classes of
        # ``modules`` are kept (a process that defines others after ``install()``, e.g. a test run,
        # does not fill rpcd's cache with them)
        names = b"|".join(re.escape(m.encode()) for m in modules)
        self.ours = re.compile(rb"^<attrs generated [a-z ]+ (?:" + names + rb")")
        self.stored: dict[bytes, bytes] = _read(path) if path is not None else {}
        self.used: dict[bytes, bytes] = {}
        self.compiled = 0
        self.reused = 0
        self.new = False
        """Whether something of ``modules`` was compiled that the file does not hold."""

    def code(self, script: str, filename: str) -> CodeType:
        """The code of ``script``: kept without the one number attrs draws per process (the type's
        hash salt in ``__hash__``, from the randomized ``hash()`` of a string), which is put back."""
        salt = _SALT.search(script)
        if salt is not None:
            script = f"{script[:salt.start(1)]}{_PLACEHOLDER}{script[salt.end(1):]}"
        key = b"%s\0%s" % (filename.encode(), blake2b(script.encode(), digest_size=20).digest())
        code = _loaded(self.stored.get(key))
        ours = self.ours.match(key) is not None
        if code is None:
            code = compile(script, filename, "exec")
            self.compiled += 1
            if ours:
                self.used[key] = marshal.dumps(code)
                self.new = True
        else:
            self.reused += 1
            if ours:
                self.used[key] = self.stored[key]
        return code if salt is None else _with_constant(code, _PLACEHOLDER, int(salt.group(1)))

    def save(self, *, force: bool = False) -> bool:
        """Write the file when this process compiled something new (``force``: what it used, only)."""
        if self.path is None or not (self.new or force) or (sys.dont_write_bytecode and not force):
            return False
        keep = not force and len(self.stored) + len(self.used) <= _KEEP_AT_MOST
        entries = dict(self.stored) if keep else {}
        entries.update(self.used)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(importlib.util.MAGIC_NUMBER + marshal.dumps(entries))
            os.replace(temporary, self.path)
        except OSError:  # a read-only install or a full disk: compiled again next time, as without the cache
            with contextlib.suppress(OSError):
                temporary.unlink()
            return False
        self.stored, self.new = entries, False
        return True


def _loaded(data: bytes | None) -> CodeType | None:
    if data is None:
        return None
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


_codes: _Codes | None = None


def cache_path() -> Path | None:
    """Where rpcd's attrs bytecode lives: ``__pycache__`` beside ``rpcd/__init__.py`` (or under
    ``sys.pycache_prefix``), named for this interpreter as its ``.pyc`` files are."""
    package = Path(__file__).parent.parent  # rpcd/core/attrs_methods.py -> rpcd/
    try:
        pyc = Path(importlib.util.cache_from_source(str(package / "attrs_methods.py")))
    except NotImplementedError:  # no cache tag: this interpreter keeps no bytecode
        return None
    return pyc.with_suffix(".bin")


def install(path: Path | None = None, *, modules: tuple[str, ...] = ("rpcd.", "cattrs.")) -> bool:
    """Route attrs' compile step through the cache at ``path`` (default ``cache_path()``) for the
    classes of the modules whose names start with one of ``modules`` (rpcd's and those of cattrs,
    which defines a few when the wire's converter is imported); saved at exit when something new was
    compiled. ``False`` when this attrs has no such step."""
    global _codes
    import attr._make as make

    if _codes is not None:
        return True
    original = getattr(make, "_compile_and_eval", None)
    if original is None or original.__code__.co_varnames[:4] != ("script", "globs", "locs", "filename"):
        return False
    codes = _Codes(path if path is not None else cache_path(), modules)

    def compile_and_eval(script: str, globs: dict[str, Any] | None, locs: Any = None, filename: str = "") -> None:
        eval(codes.code(script, filename), globs, locs)

    make._compile_and_eval = compile_and_eval
    _codes = codes
    atexit.register(codes.save)
    return True


def stats() -> tuple[int, int]:
    """``(compiled, reused)`` scripts of this process since ``install()`` (``(0, 0)`` without it)."""
    return (_codes.compiled, _codes.reused) if _codes is not None else (0, 0)


def _read(path: Path) -> dict[bytes, bytes]:
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    magic = importlib.util.MAGIC_NUMBER
    if not data.startswith(magic):
        return {}
    try:
        entries = marshal.loads(data[len(magic):])
    except (EOFError, ValueError, TypeError):
        return {}
    return entries if isinstance(entries, dict) else {}  # each entry is checked when used


def _fresh(path: Path, package: Path) -> bool:
    """Whether the file at ``path`` is newer than every module of ``package`` and than attrs itself."""
    import attr._make as make

    try:
        built = path.stat().st_mtime_ns
        newest = os.stat(make.__file__).st_mtime_ns
        for folder, _dirs, files in os.walk(package, followlinks=True):
            for name in files:
                if name.endswith(".py"):
                    newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
    except OSError:
        return False
    return built > newest


def build() -> int:
    """Import every rpcd module (defining all its attrs classes) and write the cache: the number of
    entries written, or -1 when the file is newer than every module (nothing to do). What
    ``python -m rpcd.core.attrs_methods`` runs."""
    import pkgutil

    import rpcd

    if not install():
        return 0
    path = cache_path()
    if path is not None and _fresh(path, Path(__file__).parent.parent):
        return -1
    for module in pkgutil.walk_packages(rpcd.__path__, "rpcd.", onerror=lambda name: None):
        if module.name.rsplit(".", 1)[-1] == "__main__":  # entry points run on import
            continue
        try:
            importlib.import_module(module.name)
        except Exception:  # a module that cannot be imported here defines nothing to keep
            continue
    assert _codes is not None
    return len(_codes.used) if _codes.save(force=True) else 0


if __name__ == "__main__":
    written = build()
    if written >= 0:
        print(f"[setup] bytecode of {written} attrs classes' methods cached", file=sys.stderr)
