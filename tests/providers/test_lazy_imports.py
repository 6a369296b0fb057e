"""Nothing provider-related is imported before it is needed (issue 23 builds on this): the daemon's
composition root imports no provider module, a session on the offline model imports neither
``httpx`` nor any API module, and a network provider imports its API module and ``httpx`` only
when it makes a request."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    before = set(sys.modules)
    import rpcd.daemon.app  # the composition root, as `python -m rpcd` imports it
    at_startup = sorted(m for m in set(sys.modules) - before if m.startswith(("httpx", "rpcd.providers.")))

    from rpcd.runtime.factory import make_default_factory
    from rpcd.runtime.services import ProcessInputs
    from rpcd.store import SessionManager

    async def main():
        factory = make_default_factory(ProcessInputs())
        result = await factory(cwd=sys.argv[2], agent_dir=sys.argv[1],
                               session_manager=SessionManager.in_memory(sys.argv[2]),
                               session_start_event=None)
        stop = await result.session.prompt("hello")
        loaded = sorted(m for m in sys.modules if m.startswith("httpx") or m in (
            "rpcd.providers.anthropic", "rpcd.providers.openai_responses",
            "rpcd.providers.google", "rpcd.providers.openai_compat"))
        print(json.dumps({"startup": at_startup, "model": result.session.model.id, "stop": stop,
                          "after_prompt": loaded}))

    asyncio.run(main())
    """
)


def _run(agent: Path, cwd: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(agent), str(cwd)], capture_output=True, text=True,
                          timeout=120, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_an_offline_session_imports_no_http_and_no_api_module(tmp_path: Path) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    cwd.mkdir()
    # a configured (but unused) network provider changes nothing until a request is made
    (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": "http://127.0.0.1:9"}}}))
    result = _run(agent, cwd)
    assert result["startup"] == []
    assert (result["model"], result["stop"]) == ("faux-1", "stop")
    assert result["after_prompt"] == []
