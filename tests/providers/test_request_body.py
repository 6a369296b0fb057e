"""Pi messages → Chat Completions request bodies (pure conversion, no network, no Pi needed).

These pin the shapes that matter most to servers; that every shape equals Pi's is proven against
real Pi in ``test_pi_completions_differential.py``."""

from __future__ import annotations

from typing import Any

from rpcd.providers.call import CallContext
from rpcd.providers.completions_compat import get_compat
from rpcd.providers.models_config import compose_provider, parse_models_config
from rpcd.providers.openai_compat import build_body, map_stop_reason, normalize_tool_call_id, parse_chunk_usage


def spec(*, base_url: str = "http://127.0.0.1:1/v1", provider: str = "local", **model: Any) -> Any:
    compat = model.pop("compat", {})
    config = parse_models_config({"providers": {provider: {
        "baseUrl": base_url, "api": "openai-completions", "compat": compat,
        "models": [{"id": "m", **model}]}}})
    return compose_provider(provider, None, config.providers[provider]).models[0]


def body(model: Any, messages: list[dict[str, Any]], *, level: str = "off", system: str = "") -> dict[str, Any]:
    return build_body(model, CallContext(system_prompt=system, messages=messages, thinking_level=level))


def assistant(content: list[dict[str, Any]], stop: str = "stop", model: str = "m") -> dict[str, Any]:
    return {"role": "assistant", "content": content, "api": "openai-completions", "provider": "local",
            "model": model, "stopReason": stop}


def text(value: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": value}]}


def test_tool_round_trip_history_converts_to_tool_calls_and_tool_messages() -> None:
    messages = [
        text("weather?"),
        assistant([{"type": "text", "text": "Checking."},
                   {"type": "toolCall", "id": "c1", "name": "weather", "arguments": {"city": "Oslo", "days": 2.0}}],
                  "toolUse"),
        {"role": "toolResult", "toolCallId": "c1", "toolName": "weather",
         "content": [{"type": "text", "text": "rain"}], "isError": False},
    ]
    assert body(spec(), messages)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather",
                                                          "arguments": '{"city":"Oslo","days":2}'}}]},
        {"role": "tool", "content": "rain", "tool_call_id": "c1"},
    ]


def test_a_dangling_tool_call_gets_pis_no_result_answer_and_failed_turns_are_dropped() -> None:
    messages = [
        text("go"),
        assistant([{"type": "toolCall", "id": "c1", "name": "t", "arguments": {}}], "toolUse"),
        text("never mind"),
        assistant([{"type": "text", "text": "half"}], "aborted"),
        assistant([{"type": "text", "text": "oops"}], "error"),
        text("again"),
    ]
    out = body(spec(), messages)["messages"]
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "user", "user"]
    assert out[2] == {"role": "tool", "content": "No result provided", "tool_call_id": "c1"}


def test_images_go_to_vision_models_and_become_a_placeholder_for_others() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "see"},
                                           {"type": "image", "data": "QUJD", "mimeType": "image/png"}]}
    vision = body(spec(input=["text", "image"]), [message])["messages"][0]["content"]
    assert vision[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
    blind = body(spec(), [message])["messages"][0]["content"]
    assert blind == [{"type": "text", "text": "see"},
                     {"type": "text", "text": "(image omitted: model does not support images)"}]


def test_thinking_is_replayed_in_its_field_for_the_same_model_only() -> None:
    thought = assistant([{"type": "thinking", "thinking": "hmm", "thinkingSignature": "reasoning_content"},
                         {"type": "text", "text": "ok"}])
    assert body(spec(), [thought])["messages"] == [{"role": "assistant", "content": "ok", "reasoning_content": "hmm"}]
    # another model's thinking is plain text of that turn
    assert body(spec(), [{**thought, "model": "other"}])["messages"] == [{"role": "assistant", "content": "hmmok"}]


def test_system_prompt_role_follows_reasoning_and_compat() -> None:
    assert body(spec(), [], system="S")["messages"][0] == {"role": "system", "content": "S"}
    assert body(spec(reasoning=True), [], system="S")["messages"][0]["role"] == "developer"  # detected: standard
    no_developer = spec(reasoning=True, compat={"supportsDeveloperRole": False})
    assert body(no_developer, [], system="S")["messages"][0]["role"] == "system"


def test_the_output_limit_is_the_models_clamped_to_the_context_with_no_cap_of_its_own() -> None:
    model = spec(reasoning=True, maxTokens=64000, contextWindow=200000, compat={"maxTokensField": "max_tokens"})
    out = body(model, [text("hi")], level="xhigh")
    assert out["max_tokens"] == 64000 and "max_completion_tokens" not in out
    small = body(spec(maxTokens=64000, contextWindow=20000), [text("hi")])
    assert small["max_completion_tokens"] == 20000 - 1 - 4096


def test_reasoning_effort_is_the_clamped_level_mapped_by_the_thinking_level_map() -> None:
    model = spec(reasoning=True, thinkingLevelMap={"minimal": "low", "xhigh": "max"})
    assert body(model, [], level="xhigh")["reasoning_effort"] == "max"
    assert body(model, [], level="minimal")["reasoning_effort"] == "low"
    assert "reasoning_effort" not in body(spec(reasoning=True), [], level="off")
    assert body(spec(reasoning=True), [], level="xhigh")["reasoning_effort"] == "high"  # clamped: no xhigh
    assert "reasoning_effort" not in body(spec(), [], level="high")  # not a reasoning model


def test_thinking_formats_send_their_own_parameters() -> None:
    deepseek = spec(reasoning=True, compat={"thinkingFormat": "deepseek"})
    assert body(deepseek, [], level="high")["thinking"] == {"type": "enabled"}
    assert body(deepseek, [], level="off")["thinking"] == {"type": "disabled"}
    qwen = spec(reasoning=True, compat={"thinkingFormat": "qwen-chat-template"})
    assert body(qwen, [], level="off")["chat_template_kwargs"] == {"enable_thinking": False,
                                                                    "preserve_thinking": True}
    template = spec(reasoning=True, compat={"thinkingFormat": "chat-template", "thinkingTokenBudgetField":
                                            "thinking_budget_tokens", "chatTemplateKwargs": {
                                                "thinking": {"$var": "thinking.enabled"},
                                                "budget": {"$var": "thinking.budget"}}})
    out = body(template, [], level="low")
    assert out["chat_template_kwargs"] == {"thinking": True, "budget": 2048}
    assert out["thinking_budget_tokens"] == 2048


def test_openrouter_is_detected_by_provider_or_url() -> None:
    by_url = get_compat("custom", "https://openrouter.ai/api/v1", "x/y", {})
    assert (by_url.thinking_format, by_url.supports_developer_role, by_url.session_affinity_format) == (
        "openrouter", False, "openrouter")
    model = spec(reasoning=True, base_url="http://127.0.0.1:1/openrouter.ai/v1")
    assert body(model, [], level="medium")["reasoning"] == {"effort": "medium"}
    assert body(model, [], level="off")["reasoning"] == {"effort": "none"}


def test_store_and_strict_follow_the_servers_compat() -> None:
    standard = body(spec(), [], level="off")
    assert standard["store"] is False  # Pi sends store:false unless the server is known not to take it
    deepseek = body(spec(base_url="http://127.0.0.1:1/api.deepseek.com"), [])
    assert "store" not in deepseek and "max_tokens" in deepseek


def test_tool_call_ids_from_the_responses_api_are_normalised() -> None:
    model = spec()
    assert normalize_tool_call_id(model, "call_1|fc_2") == "call_1_fc_2"
    long = normalize_tool_call_id(model, "call_abc|" + "x+/=" * 30)
    assert len(long) <= 40 and long.startswith("call_abc_")


def test_usage_counts_cache_hits_as_cache_reads_not_input() -> None:
    usage = parse_chunk_usage({"prompt_tokens": 100, "completion_tokens": 7, "prompt_cache_hit_tokens": 60,
                               "completion_tokens_details": {"reasoning_tokens": 3}}, spec())
    assert (usage["input"], usage["cacheRead"], usage["output"], usage["reasoning"], usage["totalTokens"]) == (
        40, 60, 7, 3, 107)


def test_finish_reasons_map_to_pi_stop_reasons() -> None:
    assert [map_stop_reason(r)[0] for r in ("stop", "end", "length", "tool_calls", "function_call")] == [
        "stop", "stop", "length", "toolUse", "toolUse"]
    assert map_stop_reason("content_filter") == ("error", "Provider finish_reason: content_filter")
    assert map_stop_reason("weird") == ("error", "Provider finish_reason: weird")
