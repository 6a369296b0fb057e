"""``rpcd.core.lazy.lazy_exports``: a room's ``__init__`` names its exports three times (the
``TYPE_CHECKING`` imports type checkers read, the lazy map the interpreter reads, ``__all__``);
the three agree, every name resolves to its module's object, and reading one name imports its
module only."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from rpcd.core.lazy import lazy_exports

ROOT = Path(__file__).resolve().parents[2]
LAZY_PACKAGES = sorted(
    ".".join(path.relative_to(ROOT).parent.parts)
    for path in (ROOT / "rpcd").rglob("__init__.py")
    if "lazy_exports(" in path.read_text(encoding="utf-8")
)


def _declared(package: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(TYPE_CHECKING name -> module, lazy name -> module, __all__) as written in the package's source."""
    source = (ROOT / package.replace(".", "/") / "__init__.py").read_text(encoding="utf-8")
    typed: dict[str, str] = {}
    lazy: dict[str, str] = {}
    names: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module is not None
                typed.update((alias.name, imp.module) for alias in imp.names)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            mapping = node.value.args[1]
            assert isinstance(mapping, ast.Dict)
            for key, value in zip(mapping.keys, mapping.values, strict=True):
                assert isinstance(key, ast.Constant) and isinstance(value, ast.Tuple)
                lazy.update((element.value, package + key.value) for element in value.elts
                            if isinstance(element, ast.Constant))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            names = list(ast.literal_eval(node.value))
    return typed, lazy, names


def test_the_rooms_with_lazy_exports_are_found() -> None:
    assert {"rpcd.tools", "rpcd.store", "rpcd.runtime.compaction"} <= set(LAZY_PACKAGES)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_type_checking_imports_lazy_map_and_all_name_the_same_exports(package: str) -> None:
    typed, lazy, names = _declared(package)
    assert typed == lazy
    assert sorted(lazy) == sorted(names)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_lazy_export_is_its_modules_object(package: str) -> None:
    _, lazy, _ = _declared(package)
    module = importlib.import_module(package)
    for name, where in lazy.items():
        assert getattr(module, name) is getattr(importlib.import_module(where), name)
    assert set(lazy) <= set(dir(module))
    with pytest.raises(AttributeError):
        module.no_such_export  # noqa: B018


def test_reading_one_name_imports_only_its_module() -> None:
    program = (
        "import sys\nfrom rpcd.tools import ApprovalGate\n"
        "print('rpcd.tools.approval' in sys.modules, 'rpcd.tools.registry' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["True", "False"]


def test_one_string_instead_of_a_sequence_of_names_is_refused() -> None:
    with pytest.raises(TypeError):
        lazy_exports("rpcd.tools", {".approval": "ApprovalGate"})
