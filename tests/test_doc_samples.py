"""The code samples of README.md and docs/*.md, run as written.

Every ```python / ```sh block carries a marker comment on the line before it:
``<!-- sample: run -->`` (run it: python with this interpreter, sh with ``rpcctl`` on PATH, in a
fresh HOME and agent dir, against the embedded offline model), ``<!-- sample: synopsis -->`` (a
command line's synopsis: every ``--flag`` it names must be in that command's ``--help``),
``<!-- sample: extension -->`` (an extension file: loaded into a real daemon, which must report no
error for it), ``<!-- sample: quickstart (…) -->`` (README's Quickstart: run as written from the
repository root in a fresh HOME, with nothing of the test's on PATH, so its install and PATH lines
are what make ``rpcctl`` work), or ``<!-- sample: skip (why) -->`` (e.g. it needs a real provider).
A block without a marker fails, so a new sample cannot slip in untested."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.clients.conftest import REPO, daemon_python

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"(?:<!-- sample: (?P<kind>\w+)(?: \((?P<why>[^)]*)\))? -->\n)?```(?P<lang>python|sh|bash)\n"
                   r"(?P<code>.*?)^```$", re.S | re.M)


@dataclass(frozen=True)
class Sample:
    document: Path
    line: int
    kind: str | None
    why: str | None
    lang: str
    code: str

    def __str__(self) -> str:
        return f"{self.document.name}:{self.line}"


def _samples() -> list[Sample]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start("lang")) + 1
            found.append(Sample(document, line, match["kind"], match["why"], match["lang"], match["code"]))
    return found


SAMPLES = _samples()


def _environment(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    rpcctl = bin_dir / "rpcctl"
    rpcctl.write_text(f"#!/bin/sh\nexec {daemon_python()} -m rpcd.clients \"$@\"\n")
    rpcctl.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("RPCD_FAUX_SCRIPT", "PI_CODING_AGENT_DIR")}
    return env | {"HOME": str(home), "PYTHONPATH": str(REPO), "PATH": f"{bin_dir}:{env.get('PATH', '')}"}


def test_every_sample_is_marked() -> None:
    assert len(SAMPLES) >= 8
    unmarked = [str(s) for s in SAMPLES if s.kind not in ("run", "synopsis", "extension", "skip", "quickstart")]
    assert not unmarked, f"samples without a <!-- sample: ... --> marker: {unmarked}"
    assert all(s.why for s in SAMPLES if s.kind == "skip"), "a skipped sample says why"


@pytest.mark.parametrize("sample", [s for s in SAMPLES if s.kind == "run"], ids=str)
def test_sample_runs_as_written(sample: Sample, tmp_path: Path) -> None:
    env = _environment(tmp_path)
    command = [daemon_python(), "-c", sample.code] if sample.lang == "python" else ["sh", "-e", "-c", sample.code]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, check=False, timeout=180)
    assert done.returncode == 0, f"{sample} failed:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    for expected in re.findall(r"#\s*(\w+)\s*$", sample.code, re.M) if sample.lang == "python" else ():
        assert expected in done.stdout, f"{sample}: {expected!r} not printed:\n{done.stdout}"


@pytest.mark.parametrize("sample", [s for s in SAMPLES if s.kind == "quickstart"], ids=str)
def test_the_quickstart_runs_as_written_from_the_checkout(sample: Sample, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("RPCD_FAUX_SCRIPT", "PI_CODING_AGENT_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin"}  # rpcctl only from the install step
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", sample.code], capture_output=True, text=True,
                          env=env, cwd=REPO, check=False, timeout=600)
    assert done.returncode == 0, f"{sample} failed:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    assert "echo: What is in this directory?" in done.stdout and "echo: and then?" in done.stdout
    assert "echo: thanks" in done.stdout and "faux-1" in done.stdout  # the models table
    sessions = list((home / ".pi" / "agent" / "sessions").rglob("*.jsonl"))
    assert len(sessions) == 1, sessions  # --continue kept one session for the project


@pytest.mark.parametrize("sample", [s for s in SAMPLES if s.kind == "synopsis"], ids=str)
def test_synopsis_names_only_real_flags(sample: Sample) -> None:
    help_text = subprocess.run([daemon_python(), "-P", "-m", "rpcd", "--help"], capture_output=True, text=True,
                               env=os.environ | {"PYTHONPATH": str(REPO)}, check=True, timeout=60).stdout
    flags = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", sample.code))
    missing = sorted(f for f in flags if f not in help_text)
    assert not missing, f"{sample}: not in `python -m rpcd --help`: {missing}"


@pytest.mark.parametrize("sample", [s for s in SAMPLES if s.kind == "extension"], ids=str)
def test_extension_sample_loads_without_an_error(sample: Sample, tmp_path: Path) -> None:
    from rpcd.clients.sync import SyncClient

    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "sample.py").write_text(sample.code)
    project = tmp_path / "project"
    project.mkdir()
    env = _environment(tmp_path)
    command = [daemon_python(), "-P", "-m", "rpcd"]
    with SyncClient.spawn(["--agent-dir", str(agent), "--cwd", str(project)], command=command, env=env) as client:
        state = client.get_state()
        problems = [n for n in client.iter_notifications(timeout=0.5) if n["method"] == "session/diagnostics"
                    and any(d["type"] == "error" for d in n["params"]["diagnostics"])]
    assert state["status"] == "ready" and not problems, problems

