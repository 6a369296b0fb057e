"""Model calls made inside ``keep_connections()`` (both fronts run in it: ``ProcessServices.serving``)
reuse the connection an earlier call left open, as Pi's ``fetch`` does, instead of a new client,
connection and TLS handshake per call; outside it each call has its own client, closed with it. An
aborted stream's connection is not reused. The key of a request is resolved inline unless resolving
it may run a command or read an ambient credential chain (then in a worker thread)."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import pytest

from rpcd.providers.credentials import Credentials
from rpcd.providers.http import keep_connections
from rpcd.providers.remote import RemoteProvider, RequestSettings
from tests.providers.conftest import collect, final, make_provider, provider_spec, request_for
from tests.providers.sse_server import Reply, SseServer, chunk

pytestmark = pytest.mark.anyio


def _count_connections(server: SseServer) -> list[Any]:
    accepted: list[Any] = []
    inner = server._server.process_request

    def process_request(request: Any, client_address: Any) -> None:
        accepted.append(client_address)
        inner(request, client_address)

    server._server.process_request = process_request  # type: ignore[method-assign]
    return accepted


def _reply(text: str) -> Reply:
    return Reply(events=[chunk({"role": "assistant", "content": text}), chunk(finish="stop"), "[DONE]"],
                 keep_alive=True)


async def test_calls_inside_keep_connections_share_one_connection(server: SseServer) -> None:
    accepted = _count_connections(server)
    provider = make_provider(server.base_url)
    server.enqueue(*(_reply(f"answer {n}") for n in range(3)))
    async with keep_connections():
        texts = [final(await collect(provider, request_for(provider)))["content"][0]["text"] for _ in range(3)]
    assert texts == ["answer 0", "answer 1", "answer 2"]
    assert len(server.requests) == 3 and len(accepted) == 1


async def test_a_consumer_that_stops_at_done_leaves_the_connection_for_the_next_call(server: SseServer) -> None:
    """The agent loop stops reading at ``done`` and closes the stream: the exchange ends then, with the
    response read whole, so the next call goes over the same connection (not a new one per turn)."""
    accepted = _count_connections(server)
    provider = make_provider(server.base_url)
    server.enqueue(*(_reply(f"answer {n}") for n in range(3)))
    texts = []
    async with keep_connections():
        for _ in range(3):
            async with contextlib.aclosing(provider.stream(request_for(provider))) as stream:
                async for event in stream:
                    if event["type"] == "done":
                        texts.append(event["message"]["content"][0]["text"])
                        break
    assert texts == ["answer 0", "answer 1", "answer 2"]
    assert len(accepted) == 1


async def test_calls_outside_it_each_have_their_own(server: SseServer) -> None:
    accepted = _count_connections(server)
    provider = make_provider(server.base_url)
    server.enqueue(*(_reply(f"answer {n}") for n in range(2)))
    for _ in range(2):
        assert final(await collect(provider, request_for(provider)))["stopReason"] == "stop"
    assert len(accepted) == 2


async def test_an_aborted_stream_does_not_leave_its_connection_for_the_next_call(server: SseServer) -> None:
    accepted = _count_connections(server)
    provider = make_provider(server.base_url)
    server.enqueue(Reply(events=[chunk({"role": "assistant", "content": "never ends"})], stall_after=1), _reply("next"))
    async with keep_connections():
        with anyio.move_on_after(1.0):
            async for event in provider.stream(request_for(provider)):
                if event["type"] == "text_delta":
                    break  # the consumer stops: the stream is closed mid-response
        assert final(await collect(provider, request_for(provider)))["content"][0]["text"] == "next"
    assert len(accepted) == 2


@pytest.mark.parametrize(("api_key", "name", "blocks"), [
    ("plain-key", "local", False),
    ("$SOME_KEY", "local", False),
    ("!printf key", "local", True),
    ("plain-key", "amazon-bedrock", True),
])
def test_only_a_command_or_an_ambient_chain_resolves_in_a_thread(api_key: str, name: str, blocks: bool) -> None:
    spec = provider_spec("http://127.0.0.1:9/v1", api_key=api_key, name=name)
    provider = RemoteProvider(spec, credentials=Credentials(env={"SOME_KEY": "k"}), settings=RequestSettings())
    model = provider.model_spec("test-model")
    assert model is not None
    assert provider._resolve_may_block(model) is blocks
