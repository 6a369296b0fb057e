"""Completion scripts generated from rpcctl's parser: the bash one loads in bash without a word on
stderr and completes commands, actions and option choices; zsh's and fish's are produced from the
same walk (each checked by its shell when it is installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rpcd.clients.cli import build_parser
from rpcd.clients.completion import SHELLS, script


def _bash_complete(script_file: Path, *words: str) -> list[str]:
    line = " ".join(words)
    probe = (f"source {script_file}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
             "_rpcctl_complete; printf '%s\\n' \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "--norc", "-c", probe], capture_output=True, text=True, check=True, timeout=30)
    assert done.stderr == ""
    return done.stdout.split()


@pytest.fixture
def bash_script(tmp_path: Path) -> Path:
    path = tmp_path / "rpcctl.bash"
    path.write_text(script("bash", build_parser()))
    return path


def test_the_bash_script_loads_cleanly_and_registers_the_completion(bash_script: Path) -> None:
    done = subprocess.run(["bash", "--norc", "-c", f"source {bash_script} && complete -p rpcctl"],
                          capture_output=True, text=True, check=False, timeout=30)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "_rpcctl_complete" in done.stdout


def test_bash_completes_commands_actions_options_and_choices(bash_script: Path) -> None:
    assert _bash_complete(bash_script, "rpcctl", "sess") == ["sessions"]
    assert _bash_complete(bash_script, "rpcctl", "sessions", "r") == ["rm", "rename"]
    assert _bash_complete(bash_script, "rpcctl", "--approval", "ask") == ["ask-writes", "ask-all"]
    assert "--sort" in _bash_complete(bash_script, "rpcctl", "sessions", "--s")
    after_an_option = _bash_complete(bash_script, "rpcctl", "--json", "export", "")  # options are skipped
    assert {"html", "jsonl", "--json"} <= set(after_an_option)


def test_every_command_of_the_parser_is_in_every_script() -> None:
    parser = build_parser()
    names = [a for a in parser._subparsers._group_actions[0].choices]  # type: ignore[union-attr]
    for shell in SHELLS:
        text = script(shell, parser)
        assert all(name in text for name in names), shell


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_parse_in_their_shell(shell: str, tmp_path: Path) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    path = tmp_path / f"rpcctl.{shell}"
    path.write_text(script(shell, build_parser()))
    done = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True, check=False, timeout=30)
    assert done.returncode == 0, done.stderr
