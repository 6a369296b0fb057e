"""Fixtures for provider tests: a live SSE server and a provider configured against it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rpcd.runtime.models_config import ModelSpec, ProviderSpec, parse_models_config
from rpcd.runtime.providers.base import ProviderRequest
from rpcd.runtime.providers.openai_compat import OpenAICompatProvider, RetryPolicy, Timeouts, model_info
from tests.providers.sse_server import SseServer, running_server

PLANTED_KEY = "sk-planted-5ecr3t-0123456789abcdef"
KEY_ENV = "RPCD_TEST_PLANTED_KEY"


@pytest.fixture
def server() -> Iterator[SseServer]:
    with running_server() as srv:
        yield srv


def provider_spec(base_url: str, **model: Any) -> ProviderSpec:
    config = parse_models_config(
        {
            "providers": {
                "local": {
                    "baseUrl": base_url,
                    "api": "openai-completions",
                    "apiKey": f"${KEY_ENV}",
                    "models": [{"id": "test-model", **model}],
                }
            }
        }
    )
    assert not config.diagnostics
    return config.providers["local"]


def make_provider(
    base_url: str,
    *,
    retries: int = 3,
    base_delay: float = 0.01,
    read_timeout: float = 10.0,
    **model: Any,
) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        provider_spec(base_url, **model),
        timeouts=Timeouts(connect=5.0, read=read_timeout),
        retry=RetryPolicy(max_retries=retries, base_delay=base_delay),
        env={KEY_ENV: PLANTED_KEY},
    )


def request_for(provider: OpenAICompatProvider, text: str = "Hi", **kwargs: Any) -> ProviderRequest:
    spec: ModelSpec | None = provider.model_spec("test-model")
    assert spec is not None
    messages = kwargs.pop("messages", [{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}])
    return ProviderRequest(model=model_info(spec), system_prompt="You are terse.", messages=messages, **kwargs)


async def collect(provider: OpenAICompatProvider, request: ProviderRequest) -> list[dict[str, Any]]:
    return [event async for event in provider.stream(request)]
