"""The OpenAI-compatible (Chat Completions) API against a real HTTP server on 127.0.0.1.

Failures are worded as Pi's SDK words them (``<status>: <error JSON>``), except 401/403,
whose body is never quoted; provider-level retries (``retry.provider.maxRetries``, Pi's
default 0) are silent — the visible ``auto_retry_*`` retries are the session's
(``test_session_integration.py``)."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import pytest

from rpcd.providers.base import ToolSpec
from tests.providers.conftest import PLANTED_KEY, collect, final, make_provider, provider_spec, request_for, types
from tests.providers.sse_server import Reply, SseServer, chunk, load_recording

pytestmark = pytest.mark.anyio


async def test_plain_turn_streams_text_and_records_usage(server: SseServer) -> None:
    server.enqueue(Reply(events=load_recording("plain")))
    provider = make_provider(server.base_url)
    events = await collect(provider, request_for(provider, "Hello?"))

    assert types(events) == ["start", "text_start", "text_delta", "text_delta", "text_delta", "text_end", "done"]
    message = final(events)
    assert message["content"] == [{"type": "text", "text": "Hello! How can I help?"}]
    assert message["stopReason"] == "stop" and events[-1]["reason"] == "stop"
    assert message["provider"] == "local" and message["model"] == "test-model"
    assert message["api"] == "openai-completions"
    assert message["usage"]["input"] == 16 and message["usage"]["cacheRead"] == 5
    assert message["usage"]["output"] == 8 and message["usage"]["totalTokens"] == 29
    assert message["responseId"] == "chatcmpl-CXy1"


async def test_request_is_a_streaming_chat_completion_with_bearer_auth(server: SseServer) -> None:
    server.enqueue(Reply(events=load_recording("plain")))
    provider = make_provider(server.base_url)
    await collect(provider, request_for(provider, "Hello?"))

    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {PLANTED_KEY}"
    body = request.body
    assert body["model"] == "test-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": "Hello?"}]},  # Pi keeps user content as parts
    ]


async def test_reasoning_content_becomes_a_thinking_block_before_text(server: SseServer) -> None:
    server.enqueue(Reply(events=load_recording("reasoning")))
    provider = make_provider(server.base_url, reasoning=True)
    events = await collect(provider, request_for(provider))

    message = final(events)
    assert message["content"] == [
        {"type": "thinking", "thinking": "The user greets me. I should answer briefly.",
         "thinkingSignature": "reasoning_content"},
        {"type": "text", "text": "Hi there."},
    ]
    assert types(events)[:4] == ["start", "thinking_start", "thinking_delta", "thinking_delta"]
    # as Pi: every block stays open until the stream ends, then they end in content order
    assert types(events)[-4:] == ["text_delta", "thinking_end", "text_end", "done"]
    assert message["usage"]["input"] == 12 and message["usage"]["output"] == 17


async def test_reasoning_field_and_length_finish_reason(server: SseServer) -> None:
    server.enqueue(Reply(events=load_recording("reasoning_field")))
    provider = make_provider(server.base_url)
    events = await collect(provider, request_for(provider))

    message = final(events)
    assert message["content"][0] == {"type": "thinking", "thinking": "Short thought.", "thinkingSignature": "reasoning"}
    assert message["content"][1] == {"type": "text", "text": "Answer"}
    assert message["stopReason"] == "length" and events[-1] == {"type": "done", "reason": "length", "message": message}
    assert message["usage"]["totalTokens"] == 13


async def test_tool_call_deltas_split_across_chunks_assemble_into_arguments(server: SseServer) -> None:
    server.enqueue(Reply(events=load_recording("tool_call")))
    provider = make_provider(server.base_url)
    tool = ToolSpec(name="lookup", description="Look up", parameters={"type": "object", "properties": {}})
    events = await collect(provider, request_for(provider, tools=[tool]))

    message = final(events)
    assert message["stopReason"] == "toolUse"
    assert message["content"] == [
        {"type": "toolCall", "id": "call_Vx1", "name": "lookup", "arguments": {"query": "cats"}},
        {"type": "toolCall", "id": "call_Wy2", "name": "lookup", "arguments": {"query": "dogs"}},
    ]
    starts = [e for e in events if e["type"] == "toolcall_start"]
    assert [(s["contentIndex"], s["id"], s["toolName"]) for s in starts] == [(0, "call_Vx1", "lookup"),
                                                                            (1, "call_Wy2", "lookup")]
    deltas = "".join(e["delta"] for e in events if e["type"] == "toolcall_delta" and e["contentIndex"] == 0)
    assert json.loads(deltas) == {"query": "cats"}
    assert server.requests[0].body["tools"] == [
        {"type": "function", "function": {"name": "lookup", "description": "Look up",
                                          "parameters": {"type": "object", "properties": {}}, "strict": False}}
    ]


async def test_unauthorized_names_the_provider_and_is_not_retried(server: SseServer) -> None:
    # real servers echo part of the key in the 401 body: it must not surface
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {PLANTED_KEY}", "code": "invalid_api_key"}})
    server.enqueue(Reply(status=401, body=body.encode()), Reply(events=load_recording("plain")))
    provider = make_provider(server.base_url, retries=3)
    events = await collect(provider, request_for(provider))

    assert types(events) == ["error"]
    message = final(events)
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith('401 Provider "local" rejected the request as unauthorized')
    assert "sk-" not in message["errorMessage"] and "Incorrect" not in message["errorMessage"]
    assert len(server.requests) == 1


async def test_forbidden_is_an_auth_error_too(server: SseServer) -> None:
    server.enqueue(Reply(status=403, body=b'{"error":{"message":"forbidden"}}'))
    provider = make_provider(server.base_url)
    message = final(await collect(provider, request_for(provider)))
    assert "403" in message["errorMessage"] and "unauthorized" in message["errorMessage"]
    assert len(server.requests) == 1


async def test_rate_limit_honours_retry_after_then_succeeds_silently(server: SseServer) -> None:
    server.enqueue(
        Reply(status=429, headers={"Retry-After": "0.2"}, body=b'{"error":{"message":"Rate limit reached"}}'),
        Reply(events=load_recording("plain")),
    )
    provider = make_provider(server.base_url, retries=1)
    events = await collect(provider, request_for(provider))

    assert types(events)[0] == "start" and "auto_retry_start" not in types(events)
    assert final(events)["stopReason"] == "stop"
    assert len(server.requests) == 2


async def test_no_provider_level_retry_by_default(server: SseServer) -> None:
    # Pi's retry.provider.maxRetries defaults to 0: the session retries instead, visibly
    server.enqueue(Reply(status=429, body=b'{"error":{"message":"Rate limit reached"}}'))
    provider = make_provider(server.base_url)
    message = final(await collect(provider, request_for(provider)))
    assert message["errorMessage"] == '429: {"message":"Rate limit reached"}'
    assert len(server.requests) == 1


async def test_server_errors_are_retried_until_exhausted(server: SseServer) -> None:
    server.enqueue(*[Reply(status=500, body=b'{"error":{"message":"boom"}}') for _ in range(3)])
    provider = make_provider(server.base_url, retries=2)
    events = await collect(provider, request_for(provider))

    assert types(events) == ["error"]
    assert final(events)["errorMessage"] == '500: {"message":"boom"}'
    assert len(server.requests) == 3


async def test_retry_after_over_the_limit_fails_at_once(server: SseServer) -> None:
    server.enqueue(Reply(status=503, headers={"Retry-After": "3600"}, body=b"overloaded", content_type="text/plain"))
    provider = make_provider(server.base_url, retries=3)
    events = await collect(provider, request_for(provider))
    assert types(events) == ["error"]
    assert final(events)["errorMessage"] == "Server requested 3600s retry delay (max: 60s). 503 overloaded"
    assert len(server.requests) == 1


async def test_client_errors_are_reported_without_retry(server: SseServer) -> None:
    server.enqueue(Reply(status=400, body=b'{"error":{"message":"Unsupported parameter: store"}}'))
    provider = make_provider(server.base_url, retries=3)
    message = final(await collect(provider, request_for(provider)))
    assert message["errorMessage"] == '400: {"message":"Unsupported parameter: store"}'
    assert len(server.requests) == 1


async def test_connect_errors_and_dropped_connections_are_retried_too(server: SseServer) -> None:
    server.enqueue(Reply(drop=True), Reply(events=load_recording("plain")))
    provider = make_provider(server.base_url, retries=1)
    message = final(await collect(provider, request_for(provider)))
    assert message["stopReason"] == "stop" and len(server.requests) == 2


async def test_a_dropped_connection_without_retries_is_a_connection_error(server: SseServer) -> None:
    server.enqueue(Reply(drop=True))
    provider = make_provider(server.base_url)
    message = final(await collect(provider, request_for(provider)))
    assert message["stopReason"] == "error" and message["errorMessage"].startswith("Connection error")


async def test_connection_cut_mid_stream_keeps_partial_content_with_error(server: SseServer) -> None:
    server.enqueue(Reply(events=load_recording("plain"), cut_after=3))
    provider = make_provider(server.base_url)
    events = await collect(provider, request_for(provider))

    message = final(events)
    assert events[-1]["type"] == "error" and events[-1]["reason"] == "error"
    assert message["stopReason"] == "error"
    assert message["content"] == [{"type": "text", "text": "Hello! How"}]
    assert "closed before the response completed" in message["errorMessage"]
    assert message["errorMessage"].startswith("Connection error")  # Pi's retry rules recognise it
    assert "text_end" in types(events)  # the open block is closed, so consumers see a complete partial


async def test_stream_ending_without_done_or_finish_reason_is_an_error(server: SseServer) -> None:
    # a plain EOF (proper chunked end) after some deltas: the server lost the model mid-answer
    server.enqueue(Reply(events=[chunk({"content": "partial"})]))
    provider = make_provider(server.base_url)
    message = final(await collect(provider, request_for(provider)))
    assert message["stopReason"] == "error" and message["content"] == [{"type": "text", "text": "partial"}]


async def test_error_object_mid_stream_ends_the_turn_with_error(server: SseServer) -> None:
    server.enqueue(Reply(events=[chunk({"content": "a"}), json.dumps({"error": {"message": "upstream overloaded"}})]))
    provider = make_provider(server.base_url)
    message = final(await collect(provider, request_for(provider)))
    assert message["stopReason"] == "error" and "upstream overloaded" in message["errorMessage"]


async def test_abort_mid_stream_closes_the_http_stream(server: SseServer) -> None:
    events_before = [chunk({"content": f"w{i} "}) for i in range(3)]
    server.enqueue(Reply(events=[*events_before, chunk({"content": "never"})], stall_after=3))
    provider = make_provider(server.base_url)
    received: list[dict[str, Any]] = []

    async with anyio.create_task_group() as tg:
        async def consume() -> None:
            async for event in provider.stream(request_for(provider)):
                received.append(event)
                if sum(e["type"] == "text_delta" for e in received) == 3:
                    tg.cancel_scope.cancel()

        tg.start_soon(consume)

    assert [e["type"] for e in received][-1] == "text_delta"
    # the server sees the client leave (bounded wait: a failure here means the stream was left open)
    assert await anyio.to_thread.run_sync(server.disconnected.wait, 10.0)


async def test_slow_server_hits_the_read_timeout(server: SseServer) -> None:
    server.enqueue(Reply(events=[chunk({"content": "thinking slowly"}), chunk({"content": "x"})], stall_after=1))
    provider = make_provider(server.base_url, read_timeout=0.3)
    events = await collect(provider, request_for(provider))

    message = final(events)
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == f"Request timed out ({server.root_url.removeprefix('http://')})."
    assert message["content"] == [{"type": "text", "text": "thinking slowly"}]


async def test_unreachable_server_is_an_error_naming_the_provider() -> None:
    provider = make_provider("http://127.0.0.1:9/v1")  # discard port: nothing listens
    message = final(await collect(provider, request_for(provider)))
    # Pi's words first (its retry rules look for them), then where and why; never the URL's path
    assert message["errorMessage"] == "Connection error: cannot reach 127.0.0.1:9 (Connection refused)."


async def test_planted_key_never_leaks_into_events_or_logs(server: SseServer, caplog: pytest.LogCaptureFixture) -> None:
    leak = f"Incorrect API key provided: {PLANTED_KEY}".encode()
    server.enqueue(
        Reply(status=500, body=b'{"error":{"message":"key ' + PLANTED_KEY.encode() + b' overloaded"}}'),
        Reply(status=400, body=b'{"error":{"message":"bad key ' + PLANTED_KEY.encode() + b'"}}'),
        Reply(status=401, body=leak),
        Reply(events=[chunk({"content": "ok"}), json.dumps({"error": {"message": PLANTED_KEY}})]),
    )
    provider = make_provider(server.base_url, retries=1)
    caplog.set_level(logging.DEBUG)
    collected: list[dict[str, Any]] = []
    for _ in range(3):
        collected += await collect(provider, request_for(provider))

    text = json.dumps(collected) + caplog.text + repr(provider) + repr(provider.spec)
    assert PLANTED_KEY not in text
    assert "[REDACTED]" in text  # the 500/400 bodies were shown, with the key removed


async def test_unresolvable_key_fails_the_turn_without_a_request(server: SseServer) -> None:
    provider = make_provider(server.base_url, env={})  # the variable named by models.json is not set
    message = final(await collect(provider, request_for(provider)))
    assert message["errorMessage"] == (
        'apiKey of provider "local": environment variable RPCD_TEST_PLANTED_KEY is not set'
    )
    assert server.requests == []


async def test_literal_key_from_models_json_is_redacted_though_no_env_var_holds_it(
    server: SseServer, caplog: pytest.LogCaptureFixture
) -> None:
    literal = "lm-studio-7f3a9c21d4e8b6"  # no well-known key format: only the exact value can catch it
    spec = provider_spec(server.base_url, name="lit", api_key=literal)
    provider = make_provider(server.base_url, spec=spec, retries=1, env={})
    server.enqueue(
        Reply(status=500, body=b'{"error":{"message":"echo ' + literal.encode() + b'"}}'),
        Reply(events=[chunk({"content": "ok"}), json.dumps({"error": {"message": "mid " + literal}})]),
    )
    caplog.set_level(logging.DEBUG)
    events = await collect(provider, request_for(provider))

    assert server.requests[0].headers["Authorization"] == f"Bearer {literal}"
    text = json.dumps(events) + caplog.text
    assert literal not in text
    assert text.count("[REDACTED]") >= 2  # the echoing bodies were shown, with the key removed
