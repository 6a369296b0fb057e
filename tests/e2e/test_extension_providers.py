"""``pi.register_provider`` / ``pi.unregister_provider`` and ``resources_discover`` through the real
daemon: a provider an extension registers serves turns — one over the shared HTTP path (a loopback
Chat Completions server: the request has the extension's key, model and header hook), one whose API
the extension streams itself (``stream_simple``) — unregistering takes it away again, and the skill
and template paths a ``resources_discover`` handler names are loaded (at start and after a reload)."""

from __future__ import annotations

from pathlib import Path

from rpcd.providers.catalog import builtin_catalog
from tests.driver import Daemon
from tests.providers.sse_server import Reply, chunk, running_server

PROVIDERS = '''
def register(pi):
    pi.register_provider("mine", {
        "baseUrl": BASE_URL, "api": "openai-completions", "apiKey": "extension-key",
        "models": [{"id": "m1", "name": "Mine", "contextWindow": 32000, "maxTokens": 1000}],
    })

    async def stream_simple(model, context, options):
        last = context["messages"][-1]["content"]
        text = last if isinstance(last, str) else last[0]["text"]
        message = {"role": "assistant", "content": [{"type": "text", "text": f"{model['id']} heard: {text}"}],
                   "api": model["api"], "provider": model["provider"], "model": model["id"],
                   "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                   "stopReason": "stop", "timestamp": 0}
        yield {"type": "start", "partial": message}
        yield {"type": "done", "reason": "stop", "message": message}

    pi.register_provider("local", {
        "baseUrl": "http://127.0.0.1:9", "api": "local-api", "apiKey": "unused", "stream_simple": stream_simple,
        "models": [{"id": "tiny", "name": "Tiny", "contextWindow": 8000, "maxTokens": 100}],
    })

    def headers(event, ctx):
        event["headers"]["X-From-Extension"] = "yes"

    pi.on("before_provider_headers", headers)
    pi.register_command("drop-local", lambda args, ctx: pi.unregister_provider("local"))
    # an override of one of Pi's own providers: its catalog models, moved to another address
    pi.register_provider("openrouter", {"baseUrl": BASE_URL, "apiKey": "proxy-key"})
'''


def _reply(text: str) -> Reply:
    return Reply(events=[chunk({"role": "assistant", "content": ""}), chunk({"content": text}), chunk(finish="stop"),
                         chunk(usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}), "[DONE]"])


def _models(d: Daemon) -> set[tuple[str, str]]:
    return {(m["provider"], m["id"]) for m in d.call("getAvailableModels")["models"]}


def test_providers_an_extension_registers_serve_turns_until_unregistered(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "p"
    (agent / "extensions").mkdir(parents=True)
    project.mkdir()
    with running_server() as server:
        server.enqueue(_reply("over http"))
        (agent / "extensions" / "providers.py").write_text(f"BASE_URL = {server.base_url!r}\n" + PROVIDERS)
        with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as d:
            d.initialize()
            assert {("mine", "m1"), ("local", "tiny")} <= _models(d)
            d.call("setModel", {"provider": "mine", "modelId": "m1"})
            assert d.call("prompt", {"text": "hello"}) == {"stopReason": "stop"}
            (request,) = server.requests
            assert request.path == "/v1/chat/completions" and request.body["model"] == "m1"
            headers = {k.lower(): v for k, v in request.headers.items()}
            assert headers["authorization"] == "Bearer extension-key"
            assert headers["x-from-extension"] == "yes"  # the extension's header hook, on the shared path
            d.call("setModel", {"provider": "local", "modelId": "tiny"})
            assert d.call("prompt", {"text": "are you there"}) == {"stopReason": "stop"}
            last = d.call("getMessages")["messages"][-1]
            assert (last["provider"], last["model"], last["content"][0]["text"]) == (
                "local", "tiny", "tiny heard: are you there")
            assert d.call("prompt", {"text": "/drop-local"}) == {"command": "drop-local"}
            assert ("local", "tiny") not in _models(d) and ("mine", "m1") in _models(d)
            assert len(server.requests) == 1
            catalog = builtin_catalog().providers["openrouter"].models
            model_id = next(m["id"] for m in catalog if m["api"] == "openai-completions")
            server.enqueue(_reply("through the proxy"))
            d.call("setModel", {"provider": "openrouter", "modelId": model_id})
            assert d.call("prompt", {"text": "proxied"}) == {"stopReason": "stop"}
            proxied = server.requests[-1]
            assert proxied.body["model"] == model_id
            assert {k.lower(): v for k, v in proxied.headers.items()}["authorization"] == "Bearer proxy-key"


DISCOVER = '''
import os

def register(pi):
    def discover(event, ctx):
        ctx.ui.notify(f"discover:{event['reason']}", "info")
        return {"skillPaths": [os.path.join(HERE, "found-skills")], "promptPaths": [os.path.join(HERE, "found.md")]}

    pi.on("resources_discover", discover)
'''


def test_resources_discover_paths_are_loaded_at_start_and_after_a_reload(tmp_path: Path) -> None:
    agent, project, extra = tmp_path / "agent", tmp_path / "p", tmp_path / "extra"
    (agent / "extensions").mkdir(parents=True)
    project.mkdir()
    (extra / "found-skills" / "helper").mkdir(parents=True)
    (extra / "found-skills" / "helper" / "SKILL.md").write_text("---\nname: helper\ndescription: helps\n---\nHelp.\n")
    (extra / "found.md").write_text("---\ndescription: a found template\n---\nFound $1\n")
    (agent / "extensions" / "discover.py").write_text(f"HERE = {str(extra)!r}\n" + DISCOVER)
    with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as d:
        d.initialize({"extensionUi": {}})
        names = [c["name"] for c in d.call("getCommands")["commands"]]
        assert names == ["found", "skill:helper"]
        d.call("prompt", {"text": "/found it"})
        assert d.call("getMessages")["messages"][0]["content"][0]["text"] == "Found it"
        d.call("reload")
        assert [c["name"] for c in d.call("getCommands")["commands"]] == ["found", "skill:helper"]
        notes = [m["params"]["message"] for m in d.notifications("ui/notify")]
        assert notes == ["discover:startup", "discover:reload"]
