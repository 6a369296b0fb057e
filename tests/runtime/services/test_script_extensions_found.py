"""A Pi user's TypeScript/JavaScript extensions and Pi packages are found as Pi finds them and never
skipped silently: each one rpcd cannot load is a diagnostic saying why and what to do, and the
Python extensions beside them still load, in the same load order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from rpcd.core.values import Diagnostic
from rpcd.runtime.extensions import ExtensionRunner
from rpcd.runtime.extensions.loading import ScriptLoader
from rpcd.runtime.resources.extension_paths import discover_extensions, extension_kind, split_by_kind
from rpcd.runtime.services import ProcessInputs, create_services

from ._projects import recording_extension, write, write_json

pytestmark = pytest.mark.anyio


def test_a_directory_is_read_as_pi_reads_it_with_python_modules_beside(tmp_path: Path) -> None:
    root = tmp_path / "extensions"
    write(root / "hello.ts", "export default function (pi) {}\n")
    write(root / "b.js", "module.exports = () => {}\n")
    write(root / "a.py", "def register(pi): pass\n")
    write(root / "_helper.py", "")  # rpcd's helpers
    write(root / "_shared.ts", "export default () => {}\n")  # Pi loads it: only dot names are skipped
    write(root / ".hidden.ts", "")
    write(root / "node_modules" / "dep" / "index.ts", "")
    write(root / "ignored.ts", "")
    write(root / ".gitignore", "ignored.ts\n")
    write(root / "notes.md", "")
    write(root / "with-index" / "index.ts", "")
    write(root / "with-index" / "other.ts", "")
    write(root / "js-index" / "index.js", "")
    write_json(root / "manifest" / "package.json", {"pi": {"extensions": ["./src/main.ts", "./missing.ts"]}})
    write(root / "manifest" / "src" / "main.ts", "")
    write(root / "manifest" / "index.ts", "")  # the manifest wins
    write(root / "pypkg" / "__init__.py", "def register(pi): pass\n")
    write(root / "empty-dir" / "readme.txt", "")

    found = discover_extensions(str(root))

    assert [Path(p).relative_to(root).as_posix() for p in found] == [
        "_shared.ts", "a.py", "b.js", "hello.ts", "js-index/index.js", "manifest/src/main.ts", "pypkg",
        "with-index/index.ts"]
    assert [extension_kind(p) for p in found] == ["script", "python", "script", "script", "script", "script",
                                                 "python", "script"]
    assert [(kind, len(paths)) for kind, paths in split_by_kind(found)] == [
        ("script", 1), ("python", 1), ("script", 4), ("python", 1), ("script", 1)]


def test_a_directory_that_declares_its_own_entry_is_that_entry(tmp_path: Path) -> None:
    root = tmp_path / "extensions"
    write(root / "index.ts", "")
    write(root / "other.ts", "")
    assert discover_extensions(str(root)) == [str(root / "index.ts")]


class RecordingLoader:
    """A script loader that records what it was handed and loads nothing (a fault-free stand-in for
    the Node host in a test about paths and order)."""

    def __init__(self) -> None:
        self.loaded: list[list[str]] = []

    async def load(self, runner: ExtensionRunner,
                   paths: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Diagnostic]:
        self.loaded.append([path for path, _ in paths])
        assert all(info["path"] == path for path, info in paths)
        return []


async def test_without_a_script_host_each_script_extension_and_package_is_a_diagnostic(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    markers = tmp_path / "markers"
    markers.mkdir()
    write(agent / "extensions" / "hello.ts", "export default function (pi) {}\n")
    write(agent / "extensions" / "tools" / "index.ts", "export default function (pi) {}\n")
    write(agent / "extensions" / "py_ext.py", recording_extension(markers, "py"))
    write_json(agent / "settings.json", {"packages": ["npm:pi-skills", {"source": "git:github.com/a/b"}, 7]})
    project = tmp_path / "project"
    project.mkdir()

    services = await create_services(str(project), str(agent), process_inputs=ProcessInputs())

    warnings = [d.message for d in services.diagnostics if d.type == "warning"]
    for path in (agent / "extensions" / "hello.ts", agent / "extensions" / "tools" / "index.ts"):
        (message,) = [m for m in warnings if f'Extension "{path}"' in m]
        assert "was not loaded" in message and "TypeScript/JavaScript" in message
    (npm,) = [m for m in warnings if '"npm:pi-skills"' in m]
    (git,) = [m for m in warnings if '"git:github.com/a/b"' in m]
    for message in (npm, git):
        assert "(user settings) was not loaded" in message
    assert services.extensions.paths == [str(agent / "extensions" / "py_ext.py")]
    assert (markers / "py.registered").exists()


async def test_script_extensions_reach_the_loader_in_load_order_between_python_ones(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    markers = tmp_path / "markers"
    markers.mkdir()
    write(agent / "extensions" / "a.ts", "")
    write(agent / "extensions" / "b.py", recording_extension(markers, "b"))
    write(agent / "extensions" / "c.ts", "")
    write(agent / "extensions" / "d.js", "")
    cli = write(tmp_path / "cli" / "e.ts", "")
    project = tmp_path / "project"
    project.mkdir()
    loader = RecordingLoader()
    asked = 0

    async def scripts() -> ScriptLoader | str:
        nonlocal asked
        asked += 1
        return loader

    await create_services(str(project), str(agent),
                          process_inputs=ProcessInputs(extension_paths=(str(cli),), script_loader=scripts))

    ext = agent / "extensions"
    assert loader.loaded == [[str(ext / "a.ts")], [str(ext / "c.ts"), str(ext / "d.js"), str(cli)]]
    assert asked == 1


async def test_no_script_extension_means_no_script_host_is_asked_for(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    markers = tmp_path / "markers"
    markers.mkdir()
    write(agent / "extensions" / "only.py", recording_extension(markers, "only"))
    project = tmp_path / "project"
    project.mkdir()

    async def scripts() -> ScriptLoader | str:
        raise AssertionError("the script host was asked for without a script extension")

    services = await create_services(str(project), str(agent), process_inputs=ProcessInputs(script_loader=scripts))
    assert services.extensions.paths == [str(agent / "extensions" / "only.py")]


async def test_an_untrusted_project_s_script_extensions_never_reach_the_loader(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    project = tmp_path / "project"
    write(project / ".pi" / "extensions" / "x.ts", "export default function (pi) {}\n")
    write_json(project / ".pi" / "settings.json", {"extensions": ["./more.ts"], "packages": ["npm:evil"]})
    write(project / ".pi" / "more.ts", "")
    loader = RecordingLoader()

    async def scripts() -> ScriptLoader | str:
        return loader

    services = await create_services(str(project), str(agent),
                                     process_inputs=ProcessInputs(trust_override=False, script_loader=scripts))

    assert loader.loaded == []
    assert not services.project_trusted
    assert not [d for d in services.diagnostics if "x.ts" in d.message or "npm:evil" in d.message]
