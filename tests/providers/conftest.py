"""Fixtures for provider tests: a live SSE server and providers configured against it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from rpcd.providers.base import ProviderRequest
from rpcd.providers.catalog import builtin_catalog
from rpcd.providers.credentials import Credentials
from rpcd.providers.http import ProviderRetry, Timeouts
from rpcd.providers.models_config import ProviderSpec, compose_provider, parse_models_config
from rpcd.providers.remote import RemoteProvider, RequestSettings
from tests.providers.sse_server import SseServer, running_server

PLANTED_KEY = "sk-planted-5ecr3t-0123456789abcdef"
KEY_ENV = "RPCD_TEST_PLANTED_KEY"


@pytest.fixture
def server() -> Iterator[SseServer]:
    with running_server() as srv:
        yield srv


def provider_spec(base_url: str, *, api: str = "openai-completions", name: str = "local",
                  api_key: str | None = f"${KEY_ENV}", **model: Any) -> ProviderSpec:
    entry: dict[str, Any] = {"baseUrl": base_url, "api": api, "models": [{"id": "test-model", **model}]}
    if api_key is not None:
        entry["apiKey"] = api_key
    config = parse_models_config({"providers": {name: entry}})
    assert not config.diagnostics
    builtin = builtin_catalog().providers.get(name)
    return compose_provider(name, builtin, config.providers[name])


def make_provider(
    base_url: str,
    *,
    api: str = "openai-completions",
    retries: int = 0,
    read_timeout: float = 10.0,
    env: Mapping[str, str] | None = None,
    spec: ProviderSpec | None = None,
    **model: Any,
) -> RemoteProvider:
    return RemoteProvider(
        spec or provider_spec(base_url, api=api, **model),
        credentials=Credentials(env={KEY_ENV: PLANTED_KEY} if env is None else env),
        settings=RequestSettings(
            timeouts=Timeouts(connect=5.0, read=read_timeout),
            retry=ProviderRetry(max_retries=retries, jitter=False),
        ),
    )


def request_for(provider: RemoteProvider, text: str = "Hi", *, model_id: str = "test-model",
                **kwargs: Any) -> ProviderRequest:
    spec = provider.model_spec(model_id)
    assert spec is not None
    messages = kwargs.pop("messages", [{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}])
    kwargs.setdefault("system_prompt", "You are terse.")
    return ProviderRequest(model=spec.info(), messages=messages, **kwargs)


async def collect(provider: RemoteProvider, request: ProviderRequest) -> list[dict[str, Any]]:
    return [event async for event in provider.stream(request)]


def final(events: list[dict[str, Any]]) -> dict[str, Any]:
    last = events[-1]
    assert last["type"] in ("done", "error"), last
    message: dict[str, Any] = last["message"] if last["type"] == "done" else last["error"]
    return message


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


@pytest.fixture(scope="session")
def pi_ai() -> Iterator[Any]:
    """Real Pi 0.85.0's providers (pi-ai) in one Node process; skipped (with the reason) when the
    oracle cannot be installed, unless ``RPCD_REQUIRE_PI_ORACLE=1``."""
    import os

    from tests.pi_compat.oracle import OracleUnavailable, ensure_oracle
    from tests.providers.pi_ai import running_pi_ai

    try:
        oracle = ensure_oracle()
    except OracleUnavailable as exc:
        message = f"real Pi 0.85.0 oracle unavailable: {exc}"
        if os.environ.get("RPCD_REQUIRE_PI_ORACLE") == "1":
            pytest.fail(f"{message} (RPCD_REQUIRE_PI_ORACLE=1)")
        pytest.skip(message)
    with running_pi_ai(oracle) as pi:
        yield pi
