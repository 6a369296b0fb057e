"""The daemon's first session answer does not wait for code only later requests use.

The spawn -> first ``getState`` time is mostly imports (``scripts/bench --vs-pi spawn``): what a
later request needs (the typed events, the store's import/export/file operations, user bash, the
HTTP client and the providers' API modules) is imported by that request. Observed on a real daemon
whose ``atexit`` hook (``end_process`` runs them) writes the names in ``sys.modules`` to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.driver import Daemon

LATER_ONLY = (
    "pygls",  # the correlator of the daemon's own requests to the client (rpcd.wire.peer): on the first one
    "lsprotocol",
    "lsprotocol.types",  # ~0.5 s of the start-up when pygls was imported with the wire
    "rpcd.wire.peer",
    "rpcd.protocol.events",  # the published event shapes: OpenRPC and the contract tests read them
    "rpcd.protocol.results",  # what later requests answer
    "rpcd.protocol.outgoing",  # what the daemon sends (diagnostics, progress, extension UI, prompts)
    "rpcd.store.library",  # delete / rename / export of session files
    "rpcd.store.importing",  # importJsonl
    "rpcd.store.search",  # searchSessions
    "rpcd.store.export_html",  # exportHtml
    "rpcd.tools.user_bash",  # the bash method
    "httpx",  # a model request
    "rpcd.providers.openai_compat",
    "rpcd.providers.anthropic",
    "rpcd.providers.openai_responses",
    "rpcd.providers.google",
    "rpcd.providers.transform",  # a model request (and a compaction)
    "rpcd.runtime.compaction.summarize",  # a compaction or a branch summary
    "rpcd.runtime.compaction.prepare",
    "rpcd.mcp.pool",  # MCP servers: the pool is started when a session names one
    "rpcd.mcp.session",
    "rpcd.mcp.connection",
    "mcp",
    "shutil",  # its import probes bz2, lzma and zlib: argparse's formatter asks it the terminal's width
    "tempfile",  # an atomic replace (the journal, the recency facts, a tool's spilled output)
    "hmac",  # secrets / OpenSSL's hashlib: nothing of the first answer hashes or draws secret tokens
    "_hashlib",
)
PROBE = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
    "atexit.register(lambda: sys.stderr.write('REDACTION RULES %d\\n'\n"
    "                % sys.modules['rpcd.core.redact']._rules.cache_info().currsize))\n"
    "sys.argv[0] = 'rpcd'\n"
    "runpy.run_module('rpcd', run_name='__main__', alter_sys=True)\n"
)


def test_a_daemon_that_only_answers_get_state_imports_nothing_later_requests_need(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", PROBE, "--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)]
    with Daemon(argv=argv) as daemon:
        daemon.initialize()
        state = daemon.call("getState")
        assert daemon.close() == 0  # its whole life: startup, the answer, the orderly end
        lines = [line for line in daemon.stderr_lines if line.startswith("MODULES ")]
    assert state["sessionId"]
    assert len(lines) == 1, daemon.stderr_tail()
    imported = set(lines[0].split()[1:])
    assert {"rpcd.daemon.app", "rpcd.protocol.types", "rpcd.runtime.session", "rpcd.store.manager"} <= imported
    assert sorted(set(LATER_ONLY) & imported) == []


def test_a_daemon_with_nothing_to_redact_compiles_no_redaction_patterns(tmp_path: Path) -> None:
    """``--log-level warning`` (the info lines at start are redacted as every log line is): the
    redaction's patterns (~5 ms of ``re.compile``) are compiled by the first text that needs them."""
    argv = [sys.executable, "-c", PROBE, "--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path),
            "--log-level", "warning"]
    with Daemon(argv=argv) as daemon:
        daemon.initialize()
        assert daemon.call("getState")["sessionId"]
        assert daemon.close() == 0
    assert "REDACTION RULES 0" in daemon.stderr_lines, daemon.stderr_tail()
