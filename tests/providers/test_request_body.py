"""Pi messages → Chat Completions request bodies (pure conversion, no network)."""

from __future__ import annotations

from typing import Any

from rpcd.runtime.models_config import compose_provider, parse_models_config
from rpcd.runtime.providers.base import ProviderRequest
from rpcd.runtime.providers.openai_compat import build_body, map_finish_reason, to_openai_messages


def spec(**model: Any) -> Any:
    compat = model.pop("compat", {})
    config = parse_models_config({"providers": {"local": {
        "baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions", "compat": compat,
        "models": [{"id": "m", **model}]}}})
    return compose_provider("local", None, config.providers["local"]).models[0]


def assistant(content: list[dict[str, Any]], stop: str = "stop", model: str = "m") -> dict[str, Any]:
    return {"role": "assistant", "content": content, "provider": "local", "model": model, "stopReason": stop}


def test_tool_round_trip_history_converts_to_tool_calls_and_tool_messages() -> None:
    messages = [
        {"role": "user", "content": "weather?"},
        assistant([{"type": "text", "text": "Checking."},
                   {"type": "toolCall", "id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}], "toolUse"),
        {"role": "toolResult", "toolCallId": "c1", "toolName": "weather",
         "content": [{"type": "text", "text": "rain"}], "isError": False},
    ]
    out = to_openai_messages(spec(), "", messages)
    assert out == [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "rain"},
    ]


def test_dangling_tool_calls_get_a_placeholder_result_and_failed_turns_are_dropped() -> None:
    messages = [
        {"role": "user", "content": "go"},
        assistant([{"type": "toolCall", "id": "c1", "name": "t", "arguments": {}}], "toolUse"),
        {"role": "user", "content": "never mind"},
        assistant([{"type": "text", "text": "half"}], "aborted"),
        assistant([{"type": "text", "text": "oops"}], "error"),
        {"role": "user", "content": "again"},
    ]
    out = to_openai_messages(spec(), "", messages)
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "user", "user"]
    assert out[2] == {"role": "tool", "tool_call_id": "c1", "content": "No result provided"}


def test_images_are_sent_only_to_models_that_accept_them() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "see"},
                                           {"type": "image", "data": "QUJD", "mimeType": "image/png"}]}
    with_images = to_openai_messages(spec(input=["text", "image"]), "", [message])
    assert with_images[0]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
    assert to_openai_messages(spec(), "", [message]) == [{"role": "user", "content": "see"}]


def test_thinking_is_replayed_in_its_field_for_the_same_model_only() -> None:
    thought = assistant([{"type": "thinking", "thinking": "hmm", "thinkingSignature": "reasoning_content"},
                         {"type": "text", "text": "ok"}])
    same = to_openai_messages(spec(), "", [thought])
    assert same == [{"role": "assistant", "content": "ok", "reasoning_content": "hmm"}]
    other = to_openai_messages(spec(), "", [{**thought, "model": "other"}])
    assert other == [{"role": "assistant", "content": "ok"}]


def test_system_prompt_role_follows_reasoning_and_compat() -> None:
    assert to_openai_messages(spec(), "S", [])[0] == {"role": "system", "content": "S"}
    developer = spec(reasoning=True, compat={"supportsDeveloperRole": True})
    assert to_openai_messages(developer, "S", [])[0]["role"] == "developer"


def test_body_carries_limits_effort_and_sampling_params() -> None:
    model = spec(reasoning=True, maxTokens=64000, samplingParams={"temperature": 0.2, "top_k": 20},
                 compat={"maxTokensField": "max_tokens"})
    request = ProviderRequest(model=model.info(), system_prompt="", messages=[], thinking_level="xhigh")
    body = build_body(model, request)
    assert body["max_tokens"] == 32000 and "max_completion_tokens" not in body
    assert body["reasoning_effort"] == "high"
    assert (body["temperature"], body["top_k"]) == (0.2, 20)
    assert "store" not in body  # only api.openai.com gets store:false by default
    plain = build_body(spec(), ProviderRequest(model=spec().info(), system_prompt="", messages=[],
                                               thinking_level="high"))
    assert "reasoning_effort" not in plain and plain["max_completion_tokens"] == 16384


def test_finish_reasons_map_to_pi_stop_reasons() -> None:
    assert [map_finish_reason(r) for r in ("stop", "length", "tool_calls", "function_call", "content_filter", None)] \
        == ["stop", "length", "toolUse", "toolUse", "error", "stop"]
