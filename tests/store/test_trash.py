"""Moving a file to the user's trash as the freedesktop.org Trash specification 1.0 lays it out.

What a file manager needs to list and restore the file: ``files/<name>`` holds it, and
``info/<name>.trashinfo`` is an ini file with a ``[Trash Info]`` group whose ``Path`` is the
original location, percent-encoded (RFC 2396), and whose ``DeletionDate`` is local time
``YYYY-MM-DDThh:mm:ss``. Names never collide; where no trash works, the file is deleted.
"""

from __future__ import annotations

import configparser
import os
import time
import urllib.parse
from pathlib import Path

import pytest

from rpcd.store import trash
from rpcd.store.trash import home_trash_dir, move_to_trash


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def read_info(path: str) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    return parser["Trash Info"]


def test_a_trashed_file_is_in_files_with_a_trashinfo_naming_where_it_was(tmp_path: Path, data_home: Path) -> None:
    directory = tmp_path / "sessions dir" / "--p--"
    directory.mkdir(parents=True)
    original = directory / "2026 ü%#.jsonl"
    original.write_bytes(b'{"type":"session"}\n')
    before = time.strftime("%Y-%m-%dT%H:%M:%S")
    removed = move_to_trash(str(original))
    assert removed.method == "trash"
    assert removed.trash_path == str(data_home / "Trash" / "files" / original.name)
    assert removed.info_path == str(data_home / "Trash" / "info" / (original.name + ".trashinfo"))
    assert not original.exists()
    assert Path(removed.trash_path).read_bytes() == b'{"type":"session"}\n'
    info = read_info(removed.info_path)
    assert urllib.parse.unquote(info["Path"]) == str(original)
    assert " " not in info["Path"] and "%25" in info["Path"] and "%23" in info["Path"]
    assert before <= info["DeletionDate"] <= time.strftime("%Y-%m-%dT%H:%M:%S")
    assert len(info["DeletionDate"]) == 19
    assert Path(removed.info_path).read_text().startswith("[Trash Info]\n")
    assert (Path(removed.info_path).stat().st_mode & 0o777) == 0o600
    assert (data_home / "Trash").stat().st_mode & 0o777 == 0o700


def test_a_name_taken_in_the_trash_gets_a_number_and_nothing_is_overwritten(tmp_path: Path, data_home: Path) -> None:
    paths = []
    for n in range(3):
        folder = tmp_path / f"d{n}"
        folder.mkdir()
        path = folder / "same.jsonl"
        path.write_text(f"{n}\n")
        paths.append(path)
    # a file in files/ without its info still takes the name
    (data_home / "Trash" / "files").mkdir(parents=True)
    (data_home / "Trash" / "files" / "same.3.jsonl").write_text("stray\n")
    names = [Path(move_to_trash(str(p)).trash_path or "").name for p in paths]
    assert names == ["same.jsonl", "same.2.jsonl", "same.4.jsonl"]
    files = data_home / "Trash" / "files"
    assert [(files / name).read_text() for name in names] == ["0\n", "1\n", "2\n"]
    assert (files / "same.3.jsonl").read_text() == "stray\n"
    infos = sorted(p.name for p in (data_home / "Trash" / "info").iterdir())
    assert infos == ["same.2.jsonl.trashinfo", "same.4.jsonl.trashinfo", "same.jsonl.trashinfo"]
    assert urllib.parse.unquote(read_info(str(data_home / "Trash" / "info" / "same.4.jsonl.trashinfo"))["Path"]) == (
        str(paths[2])
    )


def test_the_home_trash_defaults_to_local_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert home_trash_dir() == os.path.join(os.path.expanduser("~"), ".local", "share", "Trash")
    assert home_trash_dir({"XDG_DATA_HOME": "relative/x"}) == os.path.join(
        os.path.expanduser("~"), ".local", "share", "Trash"
    )


def test_a_file_on_another_file_system_goes_to_that_volumes_trash(
    tmp_path: Path, data_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    volume = tmp_path / "volume"
    (volume / "sessions").mkdir(parents=True)
    original = volume / "sessions" / "s.jsonl"
    original.write_text("x\n")
    device = original.stat().st_dev
    real_device_of = trash._device_of
    # the home trash is "elsewhere", and the volume's top directory is ``volume``
    monkeypatch.setattr(trash, "_device_of", lambda p: -1 if p.startswith(str(data_home)) else real_device_of(p))
    monkeypatch.setattr(trash, "_mount_point", lambda directory, dev: str(volume) if dev == device else "/")
    removed = move_to_trash(str(original))
    uid = os.getuid()
    assert removed.trash_path == str(volume / f".Trash-{uid}" / "files" / "s.jsonl")
    info = read_info(removed.info_path or "")
    assert info["Path"] == "sessions/s.jsonl"  # relative to the volume's top directory, as the spec says
    assert not (data_home / "Trash").exists()


def test_without_any_usable_trash_the_file_is_deleted(
    tmp_path: Path, data_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = tmp_path / "s.jsonl"
    original.write_text("x\n")
    monkeypatch.setattr(trash, "_into", lambda *args, **kwargs: None)
    removed = move_to_trash(str(original))
    assert removed.method == "unlink" and removed.trash_path is None
    assert not original.exists()


def test_a_trash_directory_that_is_not_ours_is_not_used(
    tmp_path: Path, data_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_home.mkdir()
    (data_home / "Trash").write_text("a file where the trash should be\n")
    volume = tmp_path / "volume"
    volume.mkdir()
    original = volume / "s.jsonl"
    original.write_text("x\n")
    monkeypatch.setattr(trash, "_mount_point", lambda directory, dev: str(volume))
    removed = move_to_trash(str(original))
    assert (data_home / "Trash").read_text() == "a file where the trash should be\n"
    assert removed.trash_path == str(volume / f".Trash-{os.getuid()}" / "files" / "s.jsonl")  # the volume's own
    assert not original.exists()
