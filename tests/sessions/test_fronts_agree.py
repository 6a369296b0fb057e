"""The fronts are thin over one session service, so they behave the same (issues 28, 34): each test
runs the real daemon over pipes, as ``rpcd`` (JSON-RPC), as ``rpcd acp`` (ACP) and — where Pi's
protocol has the call — as ``rpcd --mode rpc`` (Pi's own wire), and asserts the same facts about the
same files:

* a delete moves the session file to the user's trash, and is refused while another process holds
  the file's writer lock;
* ``--session-dir`` is where new sessions are written, and what the listing lists;
* the orderly end is bounded by ``--exit-timeout`` (an extension that never returns);
* a fork is the store's one fork of a file (the same entries, the same parent);
* an extension command's ``ctx.new_session()`` replaces the session the command ran in;
* a reload (JSON-RPC's ``reload``, ACP's ``/reload``) reopens the same file with what is on disk now;
* a run's entries that cannot be made durable (a disk that takes the bytes and fails the fsync) fail
  the prompt's answer with the write error and leave the file as it was.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.driver import REPO, Daemon, RpcFailure

FRONTS = ("jsonrpc", "acp", "pirpc")
WITH_LIBRARY = ("jsonrpc", "acp")
"""The fronts with session-library calls (Pi's RPC protocol has no delete, list or reload)."""
SESSION_IN_USE = -32036  # SessionLocked: another rpcd process holds the writer lock

COMMANDS = textwrap.dedent(
    """
    def register(pi):
        async def fresh(args, ctx):
            await ctx.new_session()

        pi.register_command("fresh", "start over", fresh)
    """
)
NEVER_RETURNS = textwrap.dedent(
    """
    import asyncio

    def register(pi):
        async def on_shutdown(event, ctx):
            await asyncio.Event().wait()  # never set

        pi.on("session_shutdown", on_shutdown)
    """
)


class Front:
    """One front of the real daemon, driven over its own wire; sessions are handles of that front."""

    def __init__(self, kind: str, tmp_path: Path, *flags: str, extension: str = COMMANDS,
                 env: dict[str, str] | None = None) -> None:
        self.kind = kind
        self.agent = tmp_path / "agent"
        (self.agent / "extensions").mkdir(parents=True)
        (self.agent / "extensions" / "probe.py").write_text(extension)
        (self.agent / "settings.json").write_text(json.dumps({"fauxScript": "replies.json"}))
        self.project = tmp_path / "project"
        self.project.mkdir()
        (self.project / "replies.json").write_text(json.dumps([{"text": f"reply {i}"} for i in range(20)]))
        self.trash = tmp_path / "xdg" / "Trash" / "files"
        self.opened = False
        trust = ["--approve"] if kind == "pirpc" else ["--trust-policy", "trust"]
        args = ["--agent-dir", str(self.agent), "--cwd", str(self.project), *trust, *flags]
        env = {"XDG_DATA_HOME": str(tmp_path / "xdg"), **(env or {})}
        if kind == "pirpc":
            self.d: Any = PiDaemon(tmp_path, args, env)
            return
        self.d = Daemon("acp", *args, env=env) if kind == "acp" else Daemon(*args, env=env)
        if kind == "acp":
            self.d.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        else:
            self.d.initialize()

    def open(self) -> str:
        """A new session of the project (the JSON-RPC daemon's current one: first its startup session)."""
        if self.kind == "pirpc":
            if self.opened:
                self.d.command("new_session")
            self.opened = True
            return str(self.d.command("get_state")["data"]["sessionId"])
        if self.kind == "acp":
            result = self.d.call("session/new", {"cwd": str(self.project), "mcpServers": []})
            return str(result["sessionId"])
        if not self.opened:
            self.opened = True
            return str(self.d.call("getState")["sessionId"])
        return str(self.d.call("newSession", {})["sessionId"])

    def prompt(self, session: str, text: str) -> None:
        if self.kind == "pirpc":
            self.d.prompt(text)
            return
        if self.kind == "acp":
            self.d.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]})
        else:
            self.d.call("prompt", {"text": text})

    def reload(self, session: str) -> None:
        if self.kind == "acp":
            self.prompt(session, "/reload")
        else:
            self.d.call("reload")

    def leave(self, session: str) -> None:
        """Stop using ``session`` (ACP: close it; JSON-RPC, Pi's wire: another session becomes current)."""
        if self.kind == "pirpc":
            self.d.command("new_session")
            return
        if self.kind == "acp":
            self.d.call("session/close", {"sessionId": session})
        else:
            self.d.call("newSession", {})

    def delete(self, session: str, path: Path) -> Any:
        if self.kind == "acp":
            return self.d.call("session/delete", {"sessionId": session})
        return self.d.call("deleteSession", {"sessionFile": str(path)})

    def fork(self, session: str, entry_id: str) -> str:
        """Fork before the user entry ``entry_id``: the new session's id."""
        if self.kind == "pirpc":
            self.d.command("fork", entryId=entry_id)
            return str(self.d.command("get_state")["data"]["sessionId"])
        if self.kind == "acp":
            params = {"sessionId": session, "cwd": str(self.project), "mcpServers": [],
                      "_meta": {"rpcd/entryId": entry_id}}
            return str(self.d.call("session/fork", params)["sessionId"])
        return str(self.d.call("fork", {"entryId": entry_id})["sessionId"])

    def listed(self) -> set[str]:
        if self.kind == "acp":
            return {s["sessionId"] for s in self.d.call("session/list", {})["sessions"]}
        return {s["sessionId"] for s in self.d.call("listSessions", {})["sessions"]}


class PiDaemon:
    """``rpcd --mode rpc`` with the calls ``Front`` needs (``tests/pirpc/wire.py`` underneath)."""

    def __init__(self, tmp_path: Path, args: list[str], env: dict[str, str]) -> None:
        from tests.driver import DAEMON, daemon_env
        from tests.pirpc.wire import Wire

        self.wire = Wire([*DAEMON, "--mode", "rpc", *args], env=daemon_env(env), cwd=tmp_path, root=tmp_path)
        self.wire.ready()
        self._stderr: str | None = None  # kept when the process is gone (the wire closes its file)

    def command(self, kind: str, **fields: Any) -> dict[str, Any]:
        answer = self.wire.command(kind, **fields)
        if not answer["success"]:
            raise RpcFailure({"code": None, "message": answer["error"]})
        return answer

    def prompt(self, text: str) -> None:
        """A prompt to its end: Pi's wire answers at acceptance, the run ends with ``agent_settled``
        (a command answers once it ran)."""
        settled = sum(1 for x in self.wire.lines if x.get("type") == "agent_settled")
        self.command("prompt", message=text)
        if not text.startswith("/"):
            self.wire.wait_for(lambda lines: sum(1 for x in lines if x.get("type") == "agent_settled") > settled)
        self.wire.idle()

    def close_stdin(self) -> None:
        self.wire.close_stdin()

    def wait_exit(self, timeout: float) -> int:
        return self.wire.wait_exit(timeout)

    @property
    def stderr_lines(self) -> list[str]:
        return (self.wire.stderr() if self._stderr is None else self._stderr).splitlines()

    def __enter__(self) -> PiDaemon:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.wire.proc.poll() is None:
            self.wire.close()
        self._stderr = self.wire.stderr()
        self.wire.__exit__(*exc)


@pytest.fixture(params=FRONTS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=WITH_LIBRARY)
def library_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def files(directory: Path) -> dict[str, Path]:
    """Session files under ``directory`` by session id (the header's)."""
    found = {}
    for path in directory.rglob("*.jsonl"):
        found[json.loads(path.read_text().splitlines()[0])["id"]] = path
    return found


def user_texts(path: Path) -> list[str]:
    entries = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [e["message"]["content"][0]["text"] for e in entries
            if e.get("type") == "message" and e["message"]["role"] == "user"]


@pytest.fixture
def front(kind: str, tmp_path: Path) -> Iterator[Front]:
    f = Front(kind, tmp_path)
    with f.d:
        yield f


def test_a_delete_trashes_the_file_and_waits_for_the_writer_lock(library_kind: str, tmp_path: Path) -> None:
    front = Front(library_kind, tmp_path)
    with front.d:
        _a_delete_trashes_the_file(front)


def _a_delete_trashes_the_file(front: Front) -> None:
    session = front.open()
    front.prompt(session, "keep me for a while")
    path = files(front.agent / "sessions")[session]
    front.leave(session)
    holder = subprocess.Popen(
        [sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[2]); from rpcd.store import writer_lock; "
         "writer_lock.set_enabled(True); lock = writer_lock.acquire(sys.argv[1]); print('held', flush=True); "
         "sys.stdin.read()", str(path), str(REPO)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(RpcFailure) as refused:
            front.delete(session, path)
        assert refused.value.error["code"] == SESSION_IN_USE
        assert path.exists()
    finally:
        holder.communicate("", timeout=30)
    text = path.read_text()
    front.delete(session, path)
    assert not path.exists()
    assert [p.read_text() for p in front.trash.iterdir()] == [text]  # in the user's trash, as it was
    assert session not in front.listed()


def test_new_sessions_are_written_to_the_session_dir_and_listed_from_it(kind: str, tmp_path: Path) -> None:
    chosen = tmp_path / "chosen"
    f = Front(kind, tmp_path, "--session-dir", str(chosen))
    with f.d:
        session = f.open()
        f.prompt(session, "where do I live?")
        assert session in files(chosen)
        if kind in WITH_LIBRARY:
            assert session in f.listed()
    assert not (f.agent / "sessions").exists() or not files(f.agent / "sessions")


def test_the_orderly_end_is_bounded_by_the_exit_timeout(kind: str, tmp_path: Path) -> None:
    f = Front(kind, tmp_path, "--exit-timeout", "1", extension=NEVER_RETURNS)
    with f.d:
        f.open()
        f.d.close_stdin()
        assert f.d.wait_exit(60) == 1  # the final disposal did not finish: not a clean exit
    logged = [json.loads(line) for line in f.d.stderr_lines if line.startswith("{")]
    failed = [e for e in logged if "final disposal failed" in str(e["msg"])]
    assert failed and failed[0]["failures"][0]["type"] == "DisposalTimeout"
    assert "within 1s" in failed[0]["failures"][0]["message"]


def test_a_fork_branches_the_saved_file_before_a_user_message(front: Front) -> None:
    session = front.open()
    front.prompt(session, "first question")
    front.prompt(session, "second question")
    source = files(front.agent / "sessions")[session]
    entries = [json.loads(line) for line in source.read_text().splitlines()[1:]]
    second = next(e["id"] for e in entries if e.get("type") == "message"
                  and e["message"]["content"][0]["text"] == "second question")
    forked = front.fork(session, second)
    front.prompt(forked, "in the fork")
    saved = files(front.agent / "sessions")
    header = json.loads(saved[forked].read_text().splitlines()[0])
    assert header["parentSession"] == str(source)
    assert user_texts(saved[forked]) == ["first question", "in the fork"]
    assert user_texts(source) == ["first question", "second question"]  # the source is not changed


def test_an_extension_commands_new_session_replaces_the_session_it_ran_in(front: Front) -> None:
    session = front.open()
    front.prompt(session, "hello")
    front.prompt(session, "/fresh")
    front.prompt(session, "after the command")
    saved = files(front.agent / "sessions")
    by_texts = sorted(user_texts(path) for path in saved.values())
    assert by_texts == [["after the command"], ["hello"]]
    assert user_texts(saved[session]) == ["hello"]


RELOADED = textwrap.dedent(
    """
    def register(pi):
        def started(event, ctx):
            ctx.append_entry("started", {"reason": event["reason"], "commands": [c["name"] for c in pi.get_commands()]})

        pi.on("session_start", started)
        pi.register_command("added", "registered after the start", lambda args, ctx: None)
    """
)


def test_a_reload_reopens_the_same_file_with_the_extensions_on_disk_now(library_kind: str, tmp_path: Path) -> None:
    front = Front(library_kind, tmp_path)
    with front.d:
        _a_reload_reopens_the_same_file(front)


def _a_reload_reopens_the_same_file(front: Front) -> None:
    session = front.open()
    front.prompt(session, "hello")
    (front.agent / "extensions" / "later.py").write_text(RELOADED)  # not loaded until the reload
    front.reload(session)
    front.prompt(session, "after the reload")
    saved = files(front.agent / "sessions")
    assert list(saved) == [session]
    assert user_texts(saved[session]) == ["hello", "after the reload"]  # the context carried over
    entries = [json.loads(line) for line in saved[session].read_text().splitlines()[1:]]
    started = [e["data"] for e in entries if e.get("customType") == "started"]
    assert started == [{"reason": "reload", "commands": ["added", "fresh"]}]  # later.py loads before probe.py


def test_a_run_whose_entries_cannot_be_made_durable_fails_its_answer_and_keeps_the_file(
    library_kind: str, tmp_path: Path
) -> None:
    """The fronts whose ``prompt`` answer is the run's end (Pi's wire answers at acceptance)."""
    from tests.driver import STORE_FSYNC
    from tests.reliability.test_disk_trouble import FAULT_EXTENSION, SESSION_WRITE_FAILED, Faults

    faults = Faults(tmp_path / "faults.txt")
    front = Front(library_kind, tmp_path, extension=FAULT_EXTENSION,
                  env={"RPCD_TEST_FAULTS": str(faults.path), STORE_FSYNC: "1"})
    with front.d:
        session = front.open()
        front.prompt(session, "first question")
        path = files(front.agent / "sessions")[session]
        before = path.read_bytes()
        faults.fail_under(path.parent, only_fsync=True)
        with pytest.raises(RpcFailure) as caught:
            front.prompt(session, "lost question")
        assert caught.value.code == SESSION_WRITE_FAILED, caught.value.error
        assert path.read_bytes() == before
        faults.clear()
        front.prompt(session, "second question")
        assert user_texts(path) == ["first question", "second question"]
