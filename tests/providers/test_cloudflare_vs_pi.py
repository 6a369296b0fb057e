"""Differential: Cloudflare Workers AI and AI Gateway the whole way pi-coding-agent goes (``ModelRuntime``
for the same agent dir, pi-ai's ``cloudflare-auth`` / ``cloudflare-stream``) against rpcd's providers.

The key, the account id and the gateway id come from the environment (``CLOUDFLARE_API_KEY``,
``CLOUDFLARE_ACCOUNT_ID``, ``CLOUDFLARE_GATEWAY_ID``) or from an ``auth.json`` entry as Pi's Cloudflare
login stores it (``{"type": "api_key", "key", "env": {…}}``); a ``models.json`` overlay points the
provider at the loopback server with the catalog's placeholders kept, so both fill in the ids. For
each of the gateway's three APIs (Anthropic, OpenAI Responses, its Chat Completions ``/compat``) and
Workers AI: the same path (the ids in it), body and headers — the gateway's ``cf-aig-authorization``
and neither ``Authorization`` nor ``x-api-key`` (Pi's ``null`` headers) — and the same message.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from rpcd.providers.remote import build_providers
from tests.providers.conftest import final
from tests.providers.sse_server import RecordedRequest, Reply, SseServer, load_recording
from tests.providers.test_pi_completions_differential import assert_same_request, context_for, rpcd_call
from tests.providers.test_pi_differential import SESSION, TOOLS, comparable, contexts

pytestmark = pytest.mark.anyio

CF_KEY = "cf-token-7Qe2vN0xL4pR9sT1"
ACCOUNT, GATEWAY = "acct-4f1c", "gw-prod"
ENV_IDS = {"CLOUDFLARE_API_KEY": CF_KEY, "CLOUDFLARE_ACCOUNT_ID": ACCOUNT, "CLOUDFLARE_GATEWAY_ID": GATEWAY}
UNSET = ("CLOUDFLARE_API_KEY", "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_GATEWAY_ID", "PI_TELEMETRY")

CASES = [  # provider, model, the base URL's tail after the loopback root, the recorded reply
    ("cloudflare-ai-gateway", "claude-fable-5",
     "gateway.ai.cloudflare.com/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/anthropic", "anthropic_text"),
    ("cloudflare-ai-gateway", "gpt-4.1",
     "gateway.ai.cloudflare.com/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/openai", "responses_text"),
    ("cloudflare-ai-gateway", "workers-ai/@cf/deepseek-ai/deepseek-v4-flash-0731",
     "gateway.ai.cloudflare.com/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/compat", "plain"),
    ("cloudflare-workers-ai", "@cf/deepseek-ai/deepseek-v4-flash-0731",
     "api.cloudflare.com/client/v4/accounts/{CLOUDFLARE_ACCOUNT_ID}/ai/v1", "plain"),
]


def agent_dir(tmp_path: Path, root: str, provider: str, tail: str, stored: bool) -> tuple[Path, dict[str, str]]:
    """The agent dir and environment of one case: the ids in the environment, or all of them stored."""
    agent = tmp_path / f"agent-{provider}-{stored}"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {provider: {"baseUrl": f"{root}/{tail}"}}}))
    if not stored:
        return agent, dict(ENV_IDS)
    ids = {"CLOUDFLARE_ACCOUNT_ID": ACCOUNT}
    if provider == "cloudflare-ai-gateway":
        ids["CLOUDFLARE_GATEWAY_ID"] = GATEWAY
    (agent / "auth.json").write_text(json.dumps({provider: {"type": "api_key", "key": CF_KEY, "env": ids}}))
    return agent, {}


async def both(server: SseServer, pi_ai: Any, agent: Path, env: dict[str, str], provider: str, model_id: str,
               messages: list[dict[str, Any]], recording: str) -> tuple[tuple[RecordedRequest, dict[str, Any]],
                                                                       tuple[RecordedRequest, list[Any]]]:
    reply = Reply(events=load_recording(recording))
    server.enqueue(copy.deepcopy(reply))
    before = len(server.requests)
    pi = pi_ai.runtime_stream(agent, provider, model_id, context_for(messages, TOOLS),
                              {"sessionId": SESSION, "reasoning": "medium"}, env=env, unset=UNSET)
    assert len(server.requests) == before + 1, f"Pi sent no request: {pi.get('error') or pi['message']}"
    pi_request = server.requests[-1]
    providers, diagnostics = build_providers(str(agent), settings={}, env=env)
    assert not [d for d in diagnostics if d.type == "error"], diagnostics
    ours = next(p for p in providers if p.name == provider)
    assert ours.auth_check() is not None, ours.unusable_reason(model_id)
    server.enqueue(copy.deepcopy(reply))
    events = await rpcd_call(ours, model_id, messages, "medium", TOOLS)
    assert len(server.requests) == before + 2, final(events).get("errorMessage")
    return (pi_request, pi), (server.requests[-1], events)


@pytest.mark.parametrize("stored", [False, True], ids=["environment", "stored"])
@pytest.mark.parametrize(("provider", "model_id", "tail", "recording"), CASES,
                         ids=[f"{p}/{m}" for p, m, _, _ in CASES])
async def test_cloudflare_requests_are_pis(server: SseServer, pi_ai: Any, tmp_path: Path, provider: str,
                                           model_id: str, tail: str, recording: str, stored: bool) -> None:
    agent, env = agent_dir(tmp_path, server.root_url, provider, tail, stored)
    model = {"api": "", "provider": provider, "id": model_id}
    every = contexts(model)
    for name in ("text", "tool_round"):
        (pi_req, pi), (our_req, events) = await both(server, pi_ai, agent, env, provider, model_id, every[name],
                                                     recording)
        where = f"{provider}/{model_id} context={name} stored={stored}"
        assert_same_request(pi_req, our_req, where)
        ids = f"/{ACCOUNT}/{GATEWAY}/" if provider == "cloudflare-ai-gateway" else f"/accounts/{ACCOUNT}/"
        assert ids in our_req.path, where
        headers = {k.lower(): v for k, v in our_req.headers.items()}
        if provider == "cloudflare-ai-gateway":
            assert headers["cf-aig-authorization"] == f"Bearer {CF_KEY}", where
            assert "authorization" not in headers and "x-api-key" not in headers, where
        else:
            assert headers["authorization"] == f"Bearer {CF_KEY}", where
        assert comparable(final(events), provider) == comparable(pi["message"], provider), where
