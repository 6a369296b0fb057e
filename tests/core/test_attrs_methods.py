"""rpcd.core.attrs_methods: attrs' generated methods are compiled once and reused by later processes,
behaving exactly as freshly compiled ones; a bad or foreign cache file only means compiling again."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rpcd.core import attrs_methods

_MODULE = """
import attrs

@attrs.frozen
class Point:
    x: int
    y: int = 0

@attrs.define
class Box:
    items: list[int] = attrs.field(factory=list)

@attrs.frozen
class Twin:
    x: int
    y: int = 0
"""

_PROBE = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from rpcd.core import attrs_methods
assert attrs_methods.install(Path(sys.argv[1]), modules=('rpcdprobe.',))
from rpcdprobe import shapes
p, q = shapes.Point(1, 2), shapes.Point(1, 2)
box = shapes.Box()
box.items.append(3)
try:
    p.x = 5
    frozen = False
except Exception:
    frozen = True
compiled, reused = attrs_methods.stats()
print(json.dumps({
    "compiled": compiled, "reused": reused, "equal": p == q, "hash_equal": hash(p) == hash(q),
    "twin_hash_differs": hash(p) != hash(shapes.Twin(1, 2)), "repr": repr(p), "box": repr(box),
    "frozen": frozen, "default": shapes.Point(7).y,
}))
"""


def _package(tmp_path: Path, source: str = _MODULE) -> Path:
    root = tmp_path / "src"
    package = root / "rpcdprobe"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "shapes.py").write_text(textwrap.dedent(source))
    return root


def _probe(cache: Path, root: Path, *flags: str, modules: str = "rpcdprobe.") -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    probe = _PROBE.replace("'rpcdprobe.'", repr(modules))
    done = subprocess.run([sys.executable, *flags, "-c", probe, str(cache), str(root)], capture_output=True,
                          text=True, check=True, timeout=60, env=env)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_second_process_reuses_every_method_and_behaves_the_same(tmp_path: Path) -> None:
    cache, root = tmp_path / "cache.bin", _package(tmp_path)
    first = _probe(cache, root)
    assert first["compiled"] == 3 and first["reused"] == 0
    assert cache.read_bytes().startswith(importlib.util.MAGIC_NUMBER)
    second = _probe(cache, root)
    assert second["compiled"] == 0 and second["reused"] == 3
    for result in (first, second):
        assert result["equal"] is True and result["hash_equal"] is True and result["frozen"] is True
        assert result["twin_hash_differs"] is True  # each class keeps its own hash salt, put back per process
        assert result["repr"] == "Point(x=1, y=2)" and result["box"] == "Box(items=[3])" and result["default"] == 0


def test_a_changed_class_is_compiled_again_not_answered_with_the_old_code(tmp_path: Path) -> None:
    cache, root = tmp_path / "cache.bin", _package(tmp_path)
    _probe(cache, root)
    grown = _MODULE.replace("    y: int = 0\n\n@attrs.define", "    y: int = 0\n    z: int = 9\n\n@attrs.define")
    _package(tmp_path, grown)
    changed = _probe(cache, root)
    assert changed["compiled"] == 1 and changed["reused"] == 2
    assert changed["repr"] == "Point(x=1, y=2, z=9)"


@pytest.mark.parametrize("content", [b"", b"not a cache", importlib.util.MAGIC_NUMBER + b"\x00garbage",
                                     importlib.util.MAGIC_NUMBER + b"N"])
def test_an_unreadable_or_foreign_cache_file_only_means_compiling(tmp_path: Path, content: bytes) -> None:
    cache, root = tmp_path / "cache.bin", _package(tmp_path)
    cache.write_bytes(content)
    result = _probe(cache, root)
    assert result["compiled"] == 3 and result["equal"] is True
    assert _probe(cache, root)["reused"] == 3  # rewritten whole


def test_only_the_named_modules_classes_are_kept(tmp_path: Path) -> None:
    cache, root = tmp_path / "cache.bin", _package(tmp_path)
    _probe(cache, root, modules="rpcd.")
    assert not cache.exists()  # nothing compiled was rpcd's: nothing written


def test_nothing_is_written_where_bytecode_may_not_be(tmp_path: Path) -> None:
    cache, root = tmp_path / "cache.bin", _package(tmp_path)
    _probe(cache, root, "-B")  # sys.dont_write_bytecode, as PYTHONDONTWRITEBYTECODE=1 sets it
    assert not cache.exists()


def test_the_installed_attrs_has_the_compile_step_the_cache_hooks() -> None:
    # The hook is what makes the daemon's start ~50 ms shorter: an attrs release without that step
    # must fail here, not silently compile again.
    import attr._make as make

    compile_and_eval = make._compile_and_eval
    assert compile_and_eval.__code__.co_varnames[:4] == ("script", "globs", "locs", "filename")


def test_the_cache_lives_beside_rpcds_own_bytecode() -> None:
    import rpcd

    path = attrs_methods.cache_path()
    assert path is not None
    package = Path(rpcd.__file__ or "").resolve().parent
    assert path.resolve().parent == package / "__pycache__" or sys.pycache_prefix
    assert path.name.startswith("attrs_methods.") and path.suffix == ".bin"


def test_a_cache_that_cannot_be_written_leaves_no_temporary_file(tmp_path: Path) -> None:
    root = _package(tmp_path)
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    cache = blocked / "cache.bin"
    cache.mkdir()  # a directory where the file goes: os.replace fails
    _probe(cache, root)
    assert sorted(p.name for p in blocked.iterdir()) == ["cache.bin"]
