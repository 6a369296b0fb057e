"""``durable.create_temporary``: what the atomic replaces (the store, the journal, the recency facts,
the settings) write into before the rename, as ``tempfile.mkstemp`` would make it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rpcd.core import durable


def test_a_temporary_file_is_new_private_and_named_as_asked(tmp_path: Path) -> None:
    fd, path = durable.create_temporary(str(tmp_path), ".journal.json.", ".tmp")
    try:
        os.write(fd, b"x")
        assert os.read(os.open(path, os.O_RDONLY), 1) == b"x"
    finally:
        os.close(fd)
    name = os.path.basename(path)
    assert os.path.dirname(path) == str(tmp_path)
    assert name.startswith(".journal.json.") and name.endswith(".tmp") and len(name) > len(".journal.json..tmp")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_name_already_taken_is_never_opened_not_even_a_link(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The first name drawn is a symbolic link to a user file: it is left alone and another is drawn."""
    victim = tmp_path / "user-file"
    victim.write_bytes(b"keep me")
    draws = iter([b"\0" * 8, b"\1" * 8])
    (tmp_path / "p-0000000000000000.tmp").symlink_to(victim)
    monkeypatch.setattr(durable.os, "urandom", lambda n: next(draws))
    fd, path = durable.create_temporary(str(tmp_path), "p-", ".tmp")
    os.write(fd, b"new")
    os.close(fd)
    assert path.endswith("p-0101010101010101.tmp")
    assert victim.read_bytes() == b"keep me"


def test_no_name_left_to_draw_is_an_error_not_a_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "p-0000000000000000.tmp").write_bytes(b"")
    monkeypatch.setattr(durable.os, "urandom", lambda n: b"\0" * n)
    with pytest.raises(FileExistsError):
        durable.create_temporary(str(tmp_path), "p-", ".tmp")
