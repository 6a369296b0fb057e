"""The approval reader of bash commands against bash itself.

The oracle is real bash with every builtin disabled, ``PATH`` empty and a ``command_not_found_handle``
that records each simple command bash runs (its words, after every expansion) into a log — so a
generated command is *executed*, harmlessly, and the log says what bash made of it: how many
commands, which words. The property: whenever :func:`simple_command_words` says "one simple command
with these words", bash ran exactly one command, with exactly those words. A command it declines
is never wrong (it is asked about every time); the second property checks that it does not decline
the commands it is meant to take.

Pathname and tilde expansion would change words without changing the command: the oracle runs in an
empty directory (a pattern matches nothing and stays as written) with ``HOME=~`` (``~/x`` expands
to itself).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from rpcd.tools.shell_syntax import command_segments, simple_command_words

BASH = shutil.which("bash") or "/bin/bash"
LONG = os.environ.get("RPCD_LONG") == "1"
SYNC_FD = 63
_PRELUDE = r"""enable -n $(compgen -b | while read -r b; do [ "$b" = enable ] || printf '%s\n' "$b"; done)
enable -n enable
command_not_found_handle() { {RECORD} "$@"; }
"""
_RECORDER = """#!/bin/sh
# one record: the argument count, then each word, NUL-terminated — in one printf, so one write to the
# O_APPEND log: commands bash runs at once (a pipeline, a process substitution) never interleave records
printf '%s\\0' "$#" "$@" >> "{LOG}"
"""


class Bash:
    """Runs a command the way the bash tool does (``bash -c``), recording instead of executing."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log = root / "log"
        self.cwd = root / "empty"
        self.cwd.mkdir()
        (root / "path").mkdir()
        record = root / "record"
        record.write_text(_RECORDER.replace("{LOG}", str(self.log)))
        record.chmod(0o755)
        self.prelude = _PRELUDE.replace("{RECORD}", str(record))
        self.env = {"PATH": str(root / "path"), "HOME": "~", "LC_ALL": "C.UTF-8"}

    def run(self, command: str) -> list[list[str]] | None:
        """The simple commands bash ran for ``command``, in order (``None``: bash refused its syntax)."""
        self.log.write_bytes(b"")
        for leftover in self.cwd.iterdir():  # a redirection may have made a file: patterns must match nothing
            shutil.rmtree(leftover) if leftover.is_dir() and not leftover.is_symlink() else leftover.unlink()
        check = subprocess.run([BASH, "-n", "-c", self.prelude + command], env=self.env, cwd=self.cwd,
                               capture_output=True, timeout=30, check=False)
        if check.returncode != 0:
            return None
        # Every process bash starts inherits fd 63, the write end of a pipe (no generated command names
        # that descriptor): its end of file says the last of them — a background job too — is gone.
        read_end, write_end = os.pipe()
        try:
            os.dup2(write_end, SYNC_FD)
            process = subprocess.Popen([BASH, "-c", self.prelude + command], env=self.env, cwd=self.cwd,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, pass_fds=(SYNC_FD,), start_new_session=True)
        finally:
            os.close(write_end)
            os.close(SYNC_FD)
        with os.fdopen(read_end, "rb") as sync:
            if not select.select([sync], [], [], 30)[0]:  # a loop that never ends (no generated one should)
                os.killpg(process.pid, signal.SIGKILL)
                pytest.fail(f"bash did not finish {command!r}")
            sync.read()
        process.wait(timeout=30)
        return list(_records(self.log.read_bytes()))


def _records(data: bytes) -> Iterator[list[str]]:
    fields = data.split(b"\0")[:-1]
    i = 0
    while i < len(fields):
        count = int(fields[i])
        yield [field.decode("utf-8", "surrogateescape") for field in fields[i + 1 : i + 1 + count]]
        i += 1 + count


@pytest.fixture(scope="module")
def bash() -> Iterator[Bash]:
    with tempfile.TemporaryDirectory(prefix="rpcd-bash-oracle-") as root:
        yield Bash(Path(root))


# -- the generator: shell-ish text, biased towards what confuses a reader ----------------------------

_PLAIN = st.text(alphabet="abcxyz019_-./,:+@%=^", min_size=1, max_size=4)
_PIECES = st.one_of(
    _PLAIN,
    st.sampled_from(["#", "~", "~/", "*", "?", "[a]", "!", "{a,b}", "{", "}", "=", "\\", "'", '"', "$", "`",
                     "$'", '$"', "$(", ")", "(", "${", ";", "&", "|", "&&", "||", "<", ">", ">>", "2>", "<<",
                     "<<<", "\n", "\\\n", " ", "\t", " #", "# ", "x#", "\r", "\u202e", "if", "then", "fi", "do",
                     "!", "[[", "]]", "time", "a=b", "~root", "$HOME", "$'\\''", "'\\''", '"\\""', "\\'",
                     "\\ ", "\\#", "$'\\x41'", "<(", ">(", "))", "((", "$((", "{ ", " }", "\\$", '\\"']),
    st.builds(lambda s: f"'{s}'", st.text(alphabet="ab #;$\"`\\()|&<>\n", max_size=4)),
    st.builds(lambda s: f'"{s}"', st.text(alphabet="ab #;'()|&<>!*\\", max_size=4)),
)
COMMANDS = st.builds("".join, st.lists(_PIECES, min_size=1, max_size=12))
_SAFE_PIECE = st.one_of(
    _PLAIN,
    st.builds(lambda s: f"'{s}'", st.text(alphabet="ab #;$\"`()|&<>{}!*~", max_size=5)),
    st.builds(lambda s: f'"{s}"', st.text(alphabet="ab #;'()|&<>{}!*~=", max_size=5)),
    st.builds(lambda s: "\\" + s, st.sampled_from(list(" #;$\"'`()|&<>{}!*~\\ab"))),
)
_SAFE_WORD = st.one_of(
    st.builds("".join, st.lists(_SAFE_PIECE, min_size=1, max_size=3)),
    st.sampled_from(["x#y", "a#", "~", "~/x", "*.zz", "[q]", "a=b", "-la", "--x=1", "a~b"]),
)
SIMPLE = st.builds(lambda first, rest, pad: pad + " ".join([first, *rest]) + pad,
                   st.one_of(st.sampled_from(["ls", "git", "rm", "'my prog'", "\\ls", "e'c'ho", "x-"]),
                             st.text(alphabet="abcxyz019_-.,:+@", min_size=1, max_size=4).filter(
                                 lambda w: not w.startswith("-"))),
                   st.lists(_SAFE_WORD, max_size=4),
                   st.sampled_from(["", " ", "\t"]))

BYPASSES = ["ls x#; touch PWNED", "ls $'a\\'' ; touch PWNED ; # '", "ls -d .#;echo pwned>F"]
_EXAMPLES = 3000 if LONG else 150


@settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
@given(COMMANDS)
@example("ls x#; touch PWNED")
@example("ls $'a\\'' ; touch PWNED ; # '")
@example("ls -d .#;echo pwned>F")
@example("ls ~root")
@example("ls \\\nx")
@example("'%'")
def test_a_command_read_as_one_simple_command_is_exactly_that_to_bash(bash: Bash, command: str) -> None:
    words = simple_command_words(command)
    if words is None:
        return
    assume("/" not in words[0])  # a path names a file: the empty directory has none to record
    assert bash.run(command) == [words], f"bash ran something else for {command!r}"


@settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
@given(SIMPLE)
def test_plain_words_quotes_and_escapes_are_read_as_one_simple_command(bash: Bash, command: str) -> None:
    words = simple_command_words(command)
    assert words is not None, f"declined {command!r}, which bash runs as {bash.run(command)}"
    assert bash.run(command) == [words]


@pytest.mark.parametrize("command", BYPASSES)
def test_the_reported_bypasses_are_not_simple_and_their_second_command_is_found(command: str) -> None:
    assert simple_command_words(command) is None
    programs = [segment[0] for segment in command_segments(command)]
    assert ("touch" in programs) or ("echo" in programs)


@settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
@given(COMMANDS)
def test_the_generous_reader_finds_every_program_bash_runs_outside_quotes_it_cannot_see_through(
        bash: Bash, command: str) -> None:
    """What bash ran (first words) is among the programs :func:`command_segments` found, for commands that
    do not build a program name out of an expansion (``$x``, ``$(…)`` as the program) — those no reader sees."""
    ran = bash.run(command)
    if not ran:
        return
    found = {segment[0] for segment in command_segments(command)}
    for record in ran:
        if record and record[0] not in found and record[0]:
            # a program name made by an expansion is out of reach by design (asked, never allowed)
            assert "$" in command or "`" in command or "{" in command or "~" in command, (
                f"bash ran {record} for {command!r}; the reader found {sorted(found)}")


ENDS_IN_A_BACKSLASH = ["'\n'\\", "'x\ny'\\", "'x\n'a\\", '"x\ny"\\', "'x\ny' z\\", "'x\ny'; q\\", "$'x\ny'\\",
                       "'x\ny'\nq\\", "'x\ny' \\", "a\\", "'a'\\", "'x\ny' \"p\nq\" r\\", "\"p\nq\" 'x\ny' r\\"]
"""Bash 5.2 drops a backslash that ends the input when its line began inside a single-quoted string."""


@pytest.mark.parametrize("command", ENDS_IN_A_BACKSLASH)
def test_a_backslash_that_ends_the_input_is_read_as_bash_reads_it(bash: Bash, command: str) -> None:
    assert command_segments(command) == bash.run(command)
