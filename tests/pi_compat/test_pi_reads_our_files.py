"""Files written by OUR store open in real Pi 0.85.0 with the same tree, leaf and context.

All scenario files are built first, then Pi reads them in one request; each test compares one
file. "Ours" is checked twice: the manager that wrote the file (its in-memory state) and a fresh
``SessionManager.open`` of the file. Pi's open must leave the bytes alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.pi_compat.oracle import PiReader
from tests.pi_compat.reading import assert_pi_reads_as_we_do, reading_of, reading_of_file, sha256_of
from tests.pi_compat.scenarios import SCENARIOS

pytestmark = pytest.mark.node


@attrs.frozen
class Written:
    path: Path
    sha256: str
    writer: dict[str, Any]
    reopened: dict[str, Any]
    pi: dict[str, Any]


@pytest.fixture(scope="module")
def written(pi_reader: PiReader, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Written]:
    root = tmp_path_factory.mktemp("pi-compat")
    built: dict[str, tuple[Path, str, dict[str, Any], dict[str, Any]]] = {}
    for name, build in SCENARIOS.items():
        directory = root / name
        directory.mkdir()
        path, manager = build(directory)
        digest = sha256_of(path)
        built[name] = (path, digest, reading_of(manager), reading_of_file(path))
    readings = pi_reader.inspect([path for path, *_ in built.values()])
    return {
        name: Written(path, digest, writer, reopened, pi)
        for (name, (path, digest, writer, reopened)), pi in zip(built.items(), readings, strict=True)
    }


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_pi_reads_our_file_as_our_reopen_does(name: str, written: dict[str, Written]) -> None:
    item = written[name]
    assert_pi_reads_as_we_do(item.pi, item.reopened, item.path)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_pi_reads_our_file_as_the_writer_holds_it(name: str, written: dict[str, Written]) -> None:
    item = written[name]
    assert_pi_reads_as_we_do(item.pi, item.writer, item.path)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_neither_pi_nor_our_open_modifies_our_file(name: str, written: dict[str, Written]) -> None:
    item = written[name]
    assert item.pi.get("sha256Before") == item.sha256
    assert sha256_of(item.path) == item.sha256
