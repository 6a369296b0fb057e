"""Issue 13 item 4: keys never leak in part. A provider's error text used to be cut to 300
characters *before* redaction, so a key straddling the cut no longer matched and its first
part reached events and session files; the info-level httpx log printed a whole base URL with
its ``?key=``. Redaction now comes before every cut, and URL query values and userinfo are masked."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.core.redact import MASK, Redactor
from rpcd.providers.http import MAX_ERROR_CHARS
from tests.providers.conftest import collect, final, make_provider, provider_spec, request_for
from tests.providers.sse_server import Reply, SseServer, chunk

pytestmark = pytest.mark.anyio

LITERAL = "lit3ral-models-key-q9v8x7w6u5t4"  # no known key format: only its exact value can catch it


def fragments(secret: str, size: int = 8) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def leaked(text: str, secret: str) -> list[str]:
    return [f for f in fragments(secret) if f in text]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(offset=st.one_of(st.integers(0, 40), st.integers(250, 330),
                        st.integers(MAX_ERROR_CHARS - 60, MAX_ERROR_CHARS + 5)))
def test_redact_and_cut_never_leaves_part_of_a_secret(offset: int) -> None:
    redactor = Redactor(env={}, extra_secrets=(LITERAL,))
    text = "x" * offset + LITERAL + " tail"
    for limit in (300, MAX_ERROR_CHARS):
        assert not leaked(redactor.redact_and_cut(text, limit), LITERAL)


@pytest.mark.parametrize("offset", [0, *range(255, 305, 7), *range(MAX_ERROR_CHARS - 50, MAX_ERROR_CHARS + 1, 9)])
async def test_provider_error_texts_of_every_length_never_carry_part_of_the_key(
    server: SseServer, caplog: pytest.LogCaptureFixture, offset: int
) -> None:
    body = json.dumps({"error": {"message": "p" * offset + LITERAL + " and more"}}).encode()
    server.enqueue(Reply(status=500, body=body),
                   Reply(events=[chunk({"content": "ok"}), json.dumps({"error": {"message": "q" * offset + LITERAL}})]))
    spec = provider_spec(server.base_url, name="lit", api_key=LITERAL)
    provider = make_provider(server.base_url, spec=spec, env={})
    caplog.set_level(logging.DEBUG)
    events = await collect(provider, request_for(provider)) + await collect(provider, request_for(provider))

    text = json.dumps(events) + caplog.text
    assert not leaked(text, LITERAL), leaked(text, LITERAL)
    assert MASK in final(events)["errorMessage"] or len(final(events)["errorMessage"]) <= MAX_ERROR_CHARS


@pytest.mark.parametrize("url", [
    "https://generativelanguage.googleapis.com/v1beta/models/gemini:streamGenerateContent?alt=sse&key={k}",
    "http://user:{k}@proxy.internal:8080/v1/chat/completions",
    "https://gw.example/v1?token={k}&x=1",
    "wss://h/ws;session={k}",
])
def test_url_query_values_and_userinfo_are_masked(url: str) -> None:
    text = f'HTTP Request: POST {url.format(k=LITERAL)} "HTTP/1.1 200 OK"'
    redacted = Redactor(env={}).redact(text)
    assert LITERAL not in redacted and MASK in redacted
    assert redacted.startswith("HTTP Request: POST ") and redacted.endswith('"HTTP/1.1 200 OK"')


@pytest.mark.parametrize("client", ["direct", "httpx"])
async def test_a_base_url_with_a_key_query_is_redacted_in_the_request_log(
    server: SseServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    from rpcd.daemon.logs import JsonFormatter

    logger = {"direct": "rpcd.providers.h1", "httpx": "httpx"}[client]
    if client == "httpx":
        monkeypatch.setenv("RPCD_HTTP_CLIENT", "httpx")
    server.enqueue(Reply(events=[chunk({"content": "hi"}), chunk({}, finish="stop"), "[DONE]"]))
    base = f"{server.base_url}?key={LITERAL}&"  # some gateways take the key in the URL
    spec = provider_spec(base, name="gw", api_key="unused-literal-key-000")
    provider = make_provider(base, spec=spec, env={})
    caplog.set_level(logging.INFO, logger=logger)
    await collect(provider, request_for(provider))

    formatted = "\n".join(JsonFormatter(Redactor(env={})).format(r) for r in caplog.records)
    assert [r.getMessage().startswith("HTTP Request: POST ") for r in caplog.records if r.name == logger] == [True]
    assert LITERAL not in formatted and MASK in formatted
