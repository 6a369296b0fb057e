"""Pi 0.85.0's own built-in tools against ours, case by case (``tool_cases.py``).

Every case's cwd is built from its tree, Pi's ``createXTool(cwd).execute`` runs all cases in
one Node process (preparation and pi-ai validation first, as Pi's agent loop does), the trees
are rebuilt byte for byte at the same paths, and our tools run the same cases through our seam
in one Python process. Then, per case: the result text and ``details`` (or the error text), the
files the case names afterwards, bash's first and last partial result, and the full-output temp
file's bytes must be equal. Temp file names are random on both sides and are compared as
``<full-output>``; where Pi's own output order is not fixed the comparison says so
(``unordered``, ``limited``). A case marked ``known`` must differ exactly as
``docs/pi-compat.md`` says.

Find cases need an ``fd`` for Pi: the machine's Debian ``fd-find`` (8.6, wrapped to exclude
``.git`` as fd ≥ 9 does); their trees are git work trees because fd 8.6 predates
``--no-require-git``. Without ``fdfind`` they skip and say so.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rpcd.tools.binaries import ripgrep_path
from rpcd.tools.images import NOT_CONVERTIBLE, NOT_RESIZABLE
from tests.pi_compat.oracle import PiOracle, ensure_fd
from tests.pi_compat.tool_cases import CASES, TREES, Case, build_tree

pytestmark = pytest.mark.node

ROOT = Path(__file__).resolve().parents[2]
TOOLS_SCRIPT = Path(__file__).resolve().parent / "tools.mjs"
FULL_OUTPUT = re.compile(r"/[^\s\]\"]*/pi-bash-[0-9a-f]{16}\.log")
DOCS = (ROOT / "docs" / "pi-compat.md").read_text()


class World:
    """The temp trees, the environment both sides share, and both sides' records."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.cases_dir = base / "cases"
        self.home = base / "home"
        self.agent_dir = base / "agent"
        self.tmp = base / "tmp"
        self.bin = base / "bin"
        self.pi: dict[str, dict[str, Any]] = {}
        self.ours: dict[str, dict[str, Any]] = {}
        self.full_outputs: dict[str, bytes] = {}

    def cwd(self, case: Case) -> Path:
        return self.cases_dir / case.id

    def build(self) -> None:
        if self.cases_dir.exists():
            shutil.rmtree(self.cases_dir)
        if self.home.exists():
            shutil.rmtree(self.home)
        for case in CASES:
            build_tree(self.cwd(case), TREES[case.tree])
        build_tree(self.home, {"notes.md": "from home\n"})
        self.agent_dir.mkdir(exist_ok=True)
        self.tmp.mkdir(exist_ok=True)

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "PI_CODING_AGENT_DIR": str(self.agent_dir),
            "TMPDIR": str(self.tmp),
            "PI_OFFLINE": "1",
            "PI_TELEMETRY": "0",
            "NO_COLOR": "1",
            "LANG": "C.UTF-8",
        }

    def shims(self) -> None:
        self.bin.mkdir(exist_ok=True)
        rg = ripgrep_path()
        assert rg is not None, "the ripgrep dependency ships rg"
        (self.bin / "rg").symlink_to(rg)
        fd_binary = ensure_fd()
        if fd_binary is not None:
            fd = self.bin / "fd"
            fd.write_text(f'#!/bin/sh\nexec {fd_binary} --exclude .git "$@"\n')
            fd.chmod(0o755)

    def payload(self) -> bytes:
        return json.dumps({"cases": [c.to_json(str(self.cwd(c))) for c in self.runnable()]}).encode()

    def runnable(self) -> list[Case]:
        return [c for c in CASES if skip_reason(c) is None]


def skip_reason(case: Case) -> str | None:
    if case.needs == "fd" and ensure_fd() is None:
        return "Pi's find needs fd: neither fdfind/fd nor Debian's fd-find package (apt-get download) is available"
    return None


def _records(output: bytes) -> dict[str, dict[str, Any]]:
    records = [json.loads(line) for line in output.decode().splitlines() if line.strip()]
    return {r["id"]: r for r in records}


def _collect_full_outputs(world: World, records: dict[str, dict[str, Any]]) -> None:
    for record in records.values():
        for path in FULL_OUTPUT.findall(json.dumps(record)):
            if path not in world.full_outputs and os.path.exists(path):
                world.full_outputs[path] = Path(path).read_bytes()


@pytest.fixture(scope="module")
def world(pi_oracle: PiOracle) -> Iterator[World]:
    base = Path(tempfile.mkdtemp(prefix="rpcd-tools-"))
    try:
        w = World(base)
        w.shims()
        env = w.env()
        w.build()
        done = subprocess.run([str(pi_oracle.node), str(TOOLS_SCRIPT)], input=w.payload(), capture_output=True,
                              env={**env, "RPCD_PI_ORACLE_DIR": str(pi_oracle.root)}, timeout=600, check=False,
                              cwd=base)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        w.pi = _records(done.stdout)
        _collect_full_outputs(w, w.pi)
        w.build()  # identical trees, same paths, for our run
        done = subprocess.run([sys.executable, "-P", "-m", "tests.pi_compat.our_tools"], input=w.payload(),
                              capture_output=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=600,
                              check=False, cwd=ROOT)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        w.ours = _records(done.stdout)
        _collect_full_outputs(w, w.ours)
        yield w
    finally:
        for path in FULL_OUTPUT.findall(json.dumps([list(w.pi.values()), list(w.ours.values())])):
            Path(path).unlink(missing_ok=True)
        shutil.rmtree(base, ignore_errors=True)


def _outcome_text(record: dict[str, Any]) -> str:
    if "error" in record:
        return record["error"]
    return "\n".join(b.get("text", "") for b in record["result"]["content"] if b.get("type") == "text")


def _normalized(world: World, record: dict[str, Any]) -> dict[str, Any]:
    """The record with temp paths replaced by ``<full-output>`` (their bytes kept apart),
    the case's cwd by ``<cwd>``, and bash's partial results reduced to the first and the last."""
    text = json.dumps(record, ensure_ascii=False)
    outputs = [world.full_outputs.get(p) for p in FULL_OUTPUT.findall(text)]
    text = FULL_OUTPUT.sub("<full-output>", text)
    out: dict[str, Any] = json.loads(text)
    updates = out.pop("updates")
    out["updates"] = [updates[0], updates[-1]] if len(updates) > 1 else updates
    out["fullOutputBytes"] = outputs[:1]
    return out


def _lines(record: dict[str, Any]) -> tuple[list[str], list[str]]:
    body, _, notice = _outcome_text(record).partition("\n\n[")
    return sorted(body.splitlines()), [notice] if notice else []


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_tool_case_matches_pi(world: World, case: Case) -> None:
    reason = skip_reason(case)
    if reason is not None:
        pytest.skip(reason)
    pi, ours = _normalized(world, world.pi[case.id]), _normalized(world, world.ours[case.id])
    if case.known is not None:
        assert f"`{case.known}`" in DOCS, f"docs/pi-compat.md does not explain {case.known}"
        assert pi != ours, f"{case.id} is marked as a known difference but matches Pi"
        _assert_known(case, pi, ours)
        return
    if case.compare == "exact":
        assert ours == pi
        return
    assert ("error" in ours) == ("error" in pi)
    pi_lines, pi_notice = _lines(pi)
    our_lines, our_notice = _lines(ours)
    assert our_notice == pi_notice
    if case.compare == "unordered":
        assert our_lines == pi_lines
        assert ours.get("result", {}).get("details") == pi.get("result", {}).get("details")
    else:  # limited: which results a limit keeps follows the (unordered) walk
        assert len(our_lines) == len(pi_lines)
        assert ours.get("result", {}).get("details", {}).keys() == pi.get("result", {}).get("details", {}).keys()


def _assert_known(case: Case, pi: dict[str, Any], ours: dict[str, Any]) -> None:
    """rpcd has no image codec: where Pi converts (BMP) or re-encodes (over 2000 px), rpcd gives
    the note Pi gives when its codec cannot; Pi's answer must be the codec's output."""
    if case.known == "read-image-codec":
        pi_content = pi["result"]["content"]
        assert pi_content[0]["text"].startswith("Read image file [") and pi_content[1]["type"] == "image"
        note = NOT_CONVERTIBLE if case.args["path"].endswith(".bmp") else NOT_RESIZABLE
        mime = "image/bmp" if case.args["path"].endswith(".bmp") else "image/png"
        assert ours["result"]["content"] == [{"type": "text", "text": f"Read image file [{mime}]\n{note}"}]
        return
    raise AssertionError(f"no check for known difference {case.known}")


def test_the_table_has_at_least_120_cases_over_the_seven_tools() -> None:
    tools = {c.tool for c in CASES}
    assert tools == {"read", "bash", "edit", "write", "grep", "find", "ls"}
    assert len(CASES) >= 120
    assert len({c.id for c in CASES}) == len(CASES)


def test_our_files_decode_like_pi(world: World) -> None:
    """The snapshots are base64 on both sides; a sanity check that they are real file bytes."""
    record = world.ours["write-unicode"]
    assert base64.b64decode(record["files"]["ü/名前.txt"]) == "日本語 ✓\n".encode()


def _pi_document(pi_oracle: PiOracle, request: dict[str, Any]) -> list[dict[str, Any]]:
    done = subprocess.run([str(pi_oracle.node), str(TOOLS_SCRIPT)], input=json.dumps(request).encode(),
                          capture_output=True, timeout=120, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir(), "PI_OFFLINE": "1",
                               "RPCD_PI_ORACLE_DIR": str(pi_oracle.root)})
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]


def test_tool_definitions_are_pis(pi_oracle: PiOracle) -> None:
    """Name, label, description, parameter schema, prompt snippet and guidelines of every built-in."""
    from rpcd.tools import create_builtin_tools

    (document,) = _pi_document(pi_oracle, {"definitions": True})
    ours = create_builtin_tools("/")
    for name, pi in document["definitions"].items():
        tool = ours[name]
        assert tool.name == pi["name"] and tool.label == pi["label"]
        assert tool.description == pi["description"]
        assert dict(tool.parameters) == pi["parameters"]
        assert tool.prompt_snippet == pi["promptSnippet"]
        assert list(tool.prompt_guidelines) == (pi.get("promptGuidelines") or [])


PI_DOCS_BLOCK = re.compile(r"\n\nPi documentation \(read only when.*?follow links to related docs \(e\.g\., tui\.md "
                           r"for TUI API details\)", re.DOTALL)


def test_system_prompt_is_pis_build_system_prompt(pi_oracle: PiOracle) -> None:
    """Our prompt for several tool sets, context files and SYSTEM/APPEND files is Pi's
    ``buildSystemPrompt`` text for the same options, minus Pi's documentation block."""
    from rpcd.runtime.resources.system_prompt import build_system_prompt, normalize_guidelines, normalize_snippet
    from rpcd.tools import create_builtin_tools

    tools = create_builtin_tools("/")
    contexts = [{"path": "/p/AGENTS.md", "content": "Use tabs.\n"}, {"path": "/p/sub/CLAUDE.md", "content": "x"}]
    selections: list[tuple[list[str], dict[str, Any]]] = [
        (["read", "bash", "edit", "write"], {}),
        (["read", "grep", "find", "ls"], {"contextFiles": contexts}),
        (["bash"], {"appendSystemPrompt": "Appended rules."}),
        ([], {}),
        (["read", "bash", "edit", "write", "grep", "find", "ls"], {"customPrompt": "You are custom.",
                                                                   "contextFiles": contexts[:1]}),
        (["read", "bash"], {"customPrompt": "Custom.", "appendSystemPrompt": "More."}),
    ]
    requests = []
    for names, extra in selections:
        snippets = {n: normalize_snippet(tools[n].prompt_snippet) for n in names if tools[n].prompt_snippet}
        guidelines = [g for n in names for g in normalize_guidelines(tools[n].prompt_guidelines)]
        requests.append({"cwd": "/work/project", "selectedTools": names, "toolSnippets": snippets,
                         "promptGuidelines": guidelines, **extra})
    documents = _pi_document(pi_oracle, {"systemPrompts": requests})
    assert len(documents) == len(requests)
    for request, document in zip(requests, documents, strict=True):

        class File:
            def __init__(self, entry: dict[str, str]) -> None:
                self.path, self.content = entry["path"], entry["content"]

        ours = build_system_prompt(
            cwd=request["cwd"], selected_tools=request["selectedTools"], tool_snippets=request["toolSnippets"],
            prompt_guidelines=request["promptGuidelines"], custom_prompt=request.get("customPrompt"),
            append_system_prompt=request.get("appendSystemPrompt"),
            context_files=[File(e) for e in request.get("contextFiles", [])],
        )
        expected = PI_DOCS_BLOCK.sub("", document["systemPrompt"])
        assert ours == expected
