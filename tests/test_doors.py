"""The one-way doors between rooms (``rpcd/__init__.py``): a test fails when one is broken.

Every module of every room is parsed (not imported) and each ``import`` of an rpcd room is
checked against the rooms its own room may import. Third-party doors too: pygls and lsprotocol
only in the wire's endpoint; the client library imports no third-party package at all, so it
starts without pygls. And nothing anywhere imports the directories ``protocol``/``clients`` by
their bare names: the installed names are ``rpcd.protocol`` / ``rpcd.clients``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rpcd"

# room -> the rooms it may import (itself always allowed)
DOORS: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "protocol": frozenset(),
    "clients": frozenset({"protocol.names", "safe_start"}),
    "transport": frozenset({"core", "protocol"}),
    "store": frozenset({"core"}),
    "tools": frozenset({"core"}),
    "mcp": frozenset({"core", "tools"}),  # MCP servers as session tools: no session, no front
    "providers": frozenset({"core"}),  # Pi's pi-ai: nothing of the session above it
    "runtime": frozenset({"core", "store", "tools", "providers", "mcp"}),
    "host": frozenset({"core"}),
    # the session service: below every front, it knows no wire
    "sessions": frozenset({"core", "host", "runtime", "providers", "store", "tools", "mcp"}),
    "wire": frozenset({"core", "protocol", "transport", "host", "sessions"}),
    # wire.errors and wire.convert only: the one exception -> error-object mapping and the one core value ->
    # wire shape conversion both fronts answer with (no pygls there)
    "acp": frozenset({"core", "protocol", "host", "runtime", "providers", "store", "tools", "transport",
                      "sessions", "wire.errors", "wire.convert"}),
    # Pi's own RPC wire: the method table's doors and names, never another front, the runtime or the store
    "pirpc": frozenset({"core", "protocol.methods", "protocol.names", "transport", "host", "sessions"}),
    "daemon": frozenset({"*"}),
    # core.attrs_methods and core.collection: in place before the entry point imports anything else
    "__main__": frozenset({"daemon", "core.attrs_methods", "core.collection"}),
    "__init__": frozenset({"safe_start"}),
    "safe_start": frozenset(),
}
# sub-room -> the rooms it may import besides itself: the session core of the runtime
# (``rpcd.runtime.*`` outside the sub-rooms) composes them, so none of them imports it back
SUB_DOORS: dict[str, frozenset[str]] = {
    "runtime.turns": frozenset({"core", "tools", "providers"}),
    "runtime.resources": frozenset({"core", "tools"}),
    "runtime.extensions": frozenset({"core"}),
    "runtime.compaction": frozenset({"core", "store", "tools", "providers", "runtime.turns"}),
}
PYGLS_ONLY_IN = {"rpcd/wire/peer.py"}  # the daemon->client request correlator, imported on first use
THIRD_PARTY_FREE = {"clients"}  # stdlib only: a fast start, no pygls/attrs/cattrs/anyio
LAZY_ONLY = {"rpcd/clients/views.py": {"rich"}}
"""Third-party packages a stdlib-only room may import inside a function (on first use), never at import time:
rpcctl's terminal view loads rich only when stdout is a terminal."""
ROOM_DIRS = {"protocol": ROOT / "protocol", "clients": ROOT / "clients"}


def _room_files() -> Iterator[tuple[str, Path, str]]:
    """(room, file, path relative to the repo) for every module we ship."""
    for child in sorted(PACKAGE.iterdir()):
        if child.name in ROOM_DIRS:
            continue  # the symlinks: read the real directories below
        if child.is_dir() and (child / "__init__.py").exists():
            for file in sorted(child.rglob("*.py")):
                yield child.name, file, str(file.relative_to(ROOT))
        elif child.suffix == ".py":
            yield child.stem, child, str(child.relative_to(ROOT))
    for room, directory in ROOM_DIRS.items():
        for file in sorted(directory.rglob("*.py")):
            if "node_modules" not in file.parts:
                yield room, file, f"rpcd/{file.relative_to(ROOT)}"


def _imports(file: Path, *, top_level_only: bool = False) -> Iterator[tuple[int, str]]:
    tree = ast.parse(file.read_text(), filename=str(file))
    nodes = _module_level(tree) if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module == "rpcd":
                for alias in node.names:
                    yield node.lineno, f"rpcd.{alias.name}"
            else:
                yield node.lineno, node.module


def _module_level(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node run when the module is imported: not inside a function body."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))


def _allowed(room: str, target: str) -> bool:
    doors = DOORS[room]
    if "*" in doors or target == room or target.startswith(room + "."):
        return True
    return any(target == door or target.startswith(door + ".") for door in doors)


def _sub_room(rel: str) -> str | None:
    dotted = ".".join(Path(rel).with_suffix("").parts[1:])
    return next((sub for sub in SUB_DOORS if dotted == sub or dotted.startswith(sub + ".")), None)


def _sub_allowed(sub: str, target: str) -> bool:
    if target == sub or target.startswith(sub + "."):
        return True
    return any(target == door or target.startswith(door + ".") for door in SUB_DOORS[sub])


FILES = list(_room_files())


def test_every_room_has_a_door_rule_and_a_docstring_naming_its_doors() -> None:
    rooms = {room for room, _, _ in FILES}
    assert rooms <= set(DOORS), f"rooms without a door rule: {sorted(rooms - set(DOORS))}"
    for room in rooms - {"__main__", "__init__"}:
        module = PACKAGE / f"{room}.py"  # a room of one module (safe_start)
        init = module if module.is_file() else (ROOM_DIRS.get(room) or PACKAGE / room) / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        if room not in ROOM_DIRS:
            assert "Doors:" in doc, f"{init.relative_to(ROOT)} does not say which rooms it may import"


@pytest.mark.parametrize(("room", "file", "rel"), FILES, ids=[rel for _, _, rel in FILES])
def test_imports_go_through_open_doors_only(room: str, file: Path, rel: str) -> None:
    broken = []
    for line, module in _imports(file):
        top = module.split(".")[0]
        if top in ("protocol", "clients"):
            broken.append(f"{rel}:{line} imports {module!r}: the installed name is 'rpcd.{module}'")
        elif top == "rpcd":
            parts = module.split(".")
            if len(parts) == 1:
                continue
            target = ".".join(parts[1:])
            if not _allowed(room, target):
                broken.append(f"{rel}:{line} ({room}) imports rpcd.{target}; {room} may import {sorted(DOORS[room])}")
            elif (sub := _sub_room(rel)) is not None and not _sub_allowed(sub, target):
                broken.append(f"{rel}:{line} ({sub}) imports rpcd.{target}; {sub} may import {sorted(SUB_DOORS[sub])}")
        elif top in ("pygls", "lsprotocol") and rel not in PYGLS_ONLY_IN:
            broken.append(f"{rel}:{line} imports {top}; pygls is confined to {sorted(PYGLS_ONLY_IN)}")
        elif room in THIRD_PARTY_FREE and top not in sys.stdlib_module_names and top != "__future__" and (
                top not in LAZY_ONLY.get(rel, ()) or (line, module) in set(_imports(file, top_level_only=True))):
            broken.append(f"{rel}:{line} imports third-party {top!r}; the {room} room is stdlib only"
                          + (" at import time (import it inside the function that needs it)" if
                             top in LAZY_ONLY.get(rel, ()) else ""))
    assert not broken, "\n".join(broken)


def test_tests_and_scripts_import_what_users_import() -> None:
    """No test or script reaches a room by its directory name (``protocol.types``)."""
    broken = []
    for directory in (ROOT / "tests", ROOT / "scripts"):
        for file in directory.rglob("*.py"):
            for line, module in _imports(file):
                if module.split(".")[0] in ("protocol", "clients"):
                    broken.append(f"{file.relative_to(ROOT)}:{line} imports {module!r}")
    assert not broken, "\n".join(broken)


def _module_name(rel: str) -> tuple[str, bool]:
    """(dotted module name, is a package) of a shipped file's path relative to the repo."""
    parts = list(Path(rel).with_suffix("").parts)
    package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if package else parts), package


def _import_graph() -> dict[str, set[str]]:
    """module -> the rpcd modules it imports, counting every import: module-level, function-level
    and ``TYPE_CHECKING`` ones, relative ones resolved (a ``from pkg import name`` edge goes to
    ``pkg.name`` when that is a module, else to ``pkg``)."""
    modules = {_module_name(rel): file for _, file, rel in FILES}
    names = {name for name, _ in modules}
    graph: dict[str, set[str]] = {}
    for (name, package), file in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(file.read_text(), filename=str(file))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = name.split(".") if package else name.split(".")[:-1]
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                elif node.module is not None:
                    base = node.module
                else:
                    continue
                for alias in node.names:
                    if f"{base}.{alias.name}" in names:
                        edges.add(f"{base}.{alias.name}")
                    elif base in names:
                        edges.add(base)
        edges.discard(name)
        graph[name] = edges
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_anywhere() -> None:
    """No two modules import each other, even through others, even in a function body or under
    ``TYPE_CHECKING``: each room and sub-room can be read (and loaded) from the bottom up."""
    circles = _circles(_import_graph())
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(circle) for circle in circles)
