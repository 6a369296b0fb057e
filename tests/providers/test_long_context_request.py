"""A long context's request: built with the cyclic collector paused and kept for the call as the bytes
it sends. Each turn of a 200,000-entry session built ~130,000 objects for its request; with the
collector on, they were moved to the oldest generation as they were made and every turn ran a full
collection (~200 ms) over the whole session. Whether the collector ran is watched with ``gc.callbacks``."""

from __future__ import annotations

import gc
from typing import Any

import orjson
import pytest

from rpcd.providers.base import new_assistant_message
from rpcd.providers.call import CallContext
from rpcd.providers.openai_compat import build_body
from rpcd.providers.remote import api_module
from rpcd.providers.transform import convert_to_llm
from tests.providers.conftest import make_provider, request_for

pytestmark = pytest.mark.anyio
TURNS = 1_500


def _history() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(TURNS):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {n}"}], "timestamp": n})
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"answer {n}"},
            {"type": "toolCall", "id": f"call_{n}", "name": "read", "arguments": {"path": f"f{n}.txt"}}],
            "api": "openai-completions", "provider": "local", "model": "test-model", "stopReason": "toolUse",
            "timestamp": n})
        messages.append({"role": "toolResult", "toolCallId": f"call_{n}", "toolName": "read",
                         "content": [{"type": "text", "text": f"contents {n}"}], "isError": False, "timestamp": n})
    return messages




async def test_a_long_contexts_request_is_built_without_a_collection_and_kept_as_its_bytes(
    collector_runs: list[int],
) -> None:
    provider = make_provider("http://127.0.0.1:9/v1")
    request = request_for(provider, messages=_history())
    spec = provider.model_spec("test-model")
    module = api_module("openai-completions")
    assert spec is not None and module is not None
    gc.collect()  # making the history filled the young generation
    collector_runs.clear()
    http_request, _ = await provider._prepare(module, spec, request, new_assistant_message(request.model), None)
    assert collector_runs == []
    assert gc.isenabled()
    assert http_request.body == {}  # the dicts were let go once encoded
    assert http_request.content is not None
    sent = orjson.loads(http_request.content)
    expected = build_body(spec, CallContext(system_prompt=request.system_prompt,
                                            messages=convert_to_llm(request.messages)))
    assert sent["messages"] == orjson.loads(orjson.dumps(expected["messages"]))
    assert len(sent["messages"]) == 1 + 3 * TURNS


def test_the_same_build_with_the_collector_on_collects(collector_runs: list[int]) -> None:
    provider = make_provider("http://127.0.0.1:9/v1")
    spec = provider.model_spec("test-model")
    assert spec is not None
    messages = convert_to_llm(_history())
    gc.collect()
    collector_runs.clear()
    build_body(spec, CallContext(system_prompt="", messages=messages))
    assert collector_runs  # what the pause spares the turn
