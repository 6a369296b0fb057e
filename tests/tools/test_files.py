"""File tools beyond the differential table: what the oracle cannot show on this machine
(fd outside git trees, permissions as root) and the mutation queue."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.tools import AbortSignal, ToolSeam, create_builtin_tools
from rpcd.tools.mutation_queue import file_mutation

pytestmark = pytest.mark.anyio


async def run(cwd: Path, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
    outcome = await ToolSeam(create_builtin_tools(str(cwd))).run("c", tool, args, AbortSignal())
    return outcome.content[0]["text"], outcome.is_error


async def test_find_honours_gitignore_outside_a_git_repository_like_fd_with_no_require_git(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("ignored/\n*.tmp\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("!keep.tmp\n")
    for rel in ("a.py", "b.tmp", "ignored/c.py", "sub/keep.tmp", "sub/drop.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    text, error = await run(tmp_path, "find", {"pattern": "*"})
    assert not error
    assert sorted(text.splitlines()) == [".gitignore", "a.py", "sub/", "sub/.gitignore", "sub/drop.py",
                                         "sub/keep.tmp"]


async def test_find_rules_from_above_a_repository_stop_at_its_root(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.py\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "inside.py").write_text("x")
    text, _ = await run(repo, "find", {"pattern": "*.py"})
    assert text == "inside.py"


async def test_find_lists_no_git_directory_and_does_not_follow_symlinks(tmp_path: Path) -> None:
    (tmp_path / ".git" / "objects").mkdir(parents=True)
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("x")
    os.symlink("real", tmp_path / "alias")
    text, _ = await run(tmp_path, "find", {"pattern": "*"})
    assert sorted(text.splitlines()) == ["alias", "real/", "real/f.txt"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes everything: no EACCES to provoke")
async def test_permission_denied_is_nodes_wording(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    secret.chmod(0)
    try:
        text, error = await run(tmp_path, "read", {"path": "secret.txt"})
        assert error and text == f"EACCES: permission denied, access '{secret}'"
        text, error = await run(tmp_path, "edit", {"path": "secret.txt", "edits": [{"oldText": "x", "newText": "y"}]})
        assert error and text == "Could not edit file: secret.txt. Error code: EACCES."
    finally:
        secret.chmod(0o600)


async def test_edits_and_writes_to_one_file_run_one_after_another(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("a\nb\nc\n")
    tools = create_builtin_tools(str(tmp_path))
    seam = ToolSeam(tools)
    outcomes: list[str] = []

    async def edit(old: str, new: str) -> None:
        result = await seam.run("c", "edit", {"path": "f.txt", "edits": [{"oldText": old, "newText": new}]},
                                AbortSignal())
        outcomes.append(result.content[0]["text"])

    async with anyio.create_task_group() as group:
        for old, new in (("a", "A"), ("b", "B"), ("c", "C")):
            group.start_soon(edit, old, new)
    assert target.read_text() == "A\nB\nC\n"  # no edit lost to a concurrent read-modify-write
    assert sorted(outcomes) == ["Successfully replaced 1 block(s) in f.txt."] * 3


async def test_the_queue_key_is_the_real_path_so_a_symlink_shares_its_targets_queue(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    target.write_text("x")
    os.symlink("t.txt", tmp_path / "link.txt")
    order: list[str] = []

    async def hold(path: Path, name: str) -> None:
        async with file_mutation(str(path)):
            order.append(f"{name}+")
            await anyio.sleep(0.05)
            order.append(f"{name}-")

    async with anyio.create_task_group() as group:
        group.start_soon(hold, target, "a")
        await anyio.sleep(0.01)
        group.start_soon(hold, tmp_path / "link.txt", "b")
    assert order == ["a+", "a-", "b+", "b-"]


async def test_read_refuses_a_fifo_instead_of_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with anyio.fail_after(10):
        text, error = await run(tmp_path, "read", {"path": "pipe"})
    assert error and text == f"Not a regular file: {fifo}"


@pytest.mark.parametrize("tool", ["write", "edit"])
async def test_write_and_edit_refuse_a_fifo_a_device_and_a_socket_instead_of_blocking(tmp_path: Path,
                                                                                       tool: str) -> None:
    """A FIFO with no reader blocked ``open`` for good (Pi's write hangs too); one with a reader would be
    fed the text; /dev/null would swallow it. Only a regular file (or a new one) is written."""
    import socket

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    os.symlink("/dev/null", tmp_path / "null")
    args = {"content": "x"} if tool == "write" else {"edits": [{"oldText": "a", "newText": "b"}]}
    try:
        for name, shown in (("pipe", fifo), ("sock", tmp_path / "sock"), ("null", tmp_path / "null")):
            with anyio.fail_after(10):
                text, error = await run(tmp_path, tool, {"path": name, **args})
            assert error and text == f"Not a regular file: {shown}", text
        # with a reader waiting, still refused, and nothing is fed to it
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            with anyio.fail_after(10):
                text, error = await run(tmp_path, tool, {"path": "pipe", **args})
            assert error and text == f"Not a regular file: {fifo}"
            try:
                fed = os.read(reader, 10)
            except BlockingIOError:  # a writer still holds it open: nothing in the pipe
                fed = b""
            assert fed == b""
        finally:
            os.close(reader)
    finally:
        server.close()
    (tmp_path / "a.txt").write_text("a\n")
    assert await run(tmp_path, tool, {"path": "a.txt", **args}) == (
        ("Successfully wrote to a.txt" if tool == "write" else "Successfully replaced 1 block(s) in a.txt."), False)
