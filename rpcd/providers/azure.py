"""Azure OpenAI Responses (``api: "azure-openai-responses"``), as pi-ai's
``azure-openai-responses.ts`` speaks it through the ``openai`` SDK's ``AzureOpenAI`` client.

Where: ``AZURE_OPENAI_BASE_URL``, else ``https://$AZURE_OPENAI_RESOURCE_NAME.openai.azure.com/openai/v1``,
else the model's ``baseUrl`` (models.json); an Azure host (``*.openai.azure.com``,
``*.cognitiveservices.azure.com``, ``*.ai.azure.com``) given without a path gets ``/openai/v1``.
``POST {base}/responses?api-version=$AZURE_OPENAI_API_VERSION`` (default ``v1``) with the key in
``api-key``. The deployment is the model id unless ``AZURE_OPENAI_DEPLOYMENT_NAME_MAP``
(``model=deployment,…``) names another. The body and the stream are OpenAI Responses'
(``openai_responses``), with Azure's defaults: tools carry ``strict: false``, ``prompt_cache_key``
is always the session id, no cache-retention fields, ``max_output_tokens`` always sent.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import quote, urlsplit, urlunsplit

from rpcd.providers.call import CallContext, merge_headers
from rpcd.providers.http import HttpRequest, StreamError
from rpcd.providers.models_config import ModelSpec
from rpcd.providers.openai_responses import (
    MIN_OUTPUT_TOKENS,
    PROMPT_CACHE_KEY_MAX,
    ResponsesParser,
    convert_messages,
    convert_tools,
)
from rpcd.providers.transform import clamp_max_tokens_to_context, estimate_context_tokens

API: Final = "azure-openai-responses"
DEFAULT_API_VERSION: Final = "v1"
TOOL_CALL_PROVIDERS: Final = frozenset({"openai", "openai-codex", "opencode", "azure-openai-responses"})
AZURE_HOST_SUFFIXES: Final = (".openai.azure.com", ".cognitiveservices.azure.com", ".ai.azure.com")


def deployment_name(model: ModelSpec, ctx: CallContext) -> str:
    """pi-ai ``resolveDeploymentName``: ``AZURE_OPENAI_DEPLOYMENT_NAME_MAP`` (``id=deployment,…``), else the id."""
    mapping: dict[str, str] = {}
    for entry in (ctx.env_value("AZURE_OPENAI_DEPLOYMENT_NAME_MAP") or "").split(","):
        model_id, sep, deployment = entry.strip().partition("=")
        deployment = deployment.split("=", 1)[0]
        if sep and model_id.strip() and deployment.strip():
            mapping[model_id.strip()] = deployment.strip()
    return mapping.get(model.id) or model.id


def normalize_base_url(base_url: str) -> str:
    """pi-ai ``normalizeAzureBaseUrl``."""
    trimmed = base_url.strip().rstrip("/")
    parts = urlsplit(trimmed)
    if not parts.scheme or not parts.netloc:
        raise StreamError(f"Invalid Azure OpenAI base URL: {base_url}")
    host = (parts.hostname or "").lower()
    path = parts.path.rstrip("/")
    if host.endswith(AZURE_HOST_SUFFIXES) and path in ("", "/", "/openai", "/openai/v1/responses"):
        parts = parts._replace(path="/openai/v1", query="")
    elif not parts.path:
        parts = parts._replace(path="/")
    return urlunsplit(parts).rstrip("/")


def resolve_base_url(model: ModelSpec, ctx: CallContext) -> str:
    """pi-ai ``resolveAzureConfig``'s base URL."""
    base = (ctx.env_value("AZURE_OPENAI_BASE_URL") or "").strip() or None
    resource = ctx.env_value("AZURE_OPENAI_RESOURCE_NAME")
    if not base and resource:
        base = f"https://{resource}.openai.azure.com/openai/v1"
    if not base and model.base_url:
        base = model.base_url
    if not base:
        raise StreamError("Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME, "
                          "or pass azureBaseUrl, azureResourceName, or model.baseUrl.")
    return normalize_base_url(base)


def build_body(model: ModelSpec, ctx: CallContext) -> dict[str, Any]:
    tools = ctx.tool_dicts()
    max_tokens = clamp_max_tokens_to_context(
        model.context_window, estimate_context_tokens(ctx.system_prompt, ctx.messages, tools),
        ctx.output_limit(model.max_tokens),
    )
    body: dict[str, Any] = {
        "model": deployment_name(model, ctx),
        "input": convert_messages(model, ctx.system_prompt, ctx.messages, tool_call_providers=TOOL_CALL_PROVIDERS),
        "stream": True,
    }
    if ctx.session_id:
        body["prompt_cache_key"] = "".join(list(ctx.session_id)[:PROMPT_CACHE_KEY_MAX])
    body["store"] = False
    if max_tokens:
        body["max_output_tokens"] = max(max_tokens, MIN_OUTPUT_TOKENS)
    if tools:
        strict = model.compat.get("supportsStrictMode")
        body["tools"] = convert_tools(tools, True if strict is None else bool(strict))
    if model.reasoning:
        effort = ctx.reasoning
        if effort is not None:
            effort = model.info().clamp_thinking(effort)
        level_map = model.thinking_level_map or {}
        if effort is not None and effort != "off":
            body["reasoning"] = {"effort": level_map.get(effort) or effort, "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        elif "off" not in level_map or level_map.get("off") is not None:
            body["reasoning"] = {"effort": level_map.get("off") or "none"}
    body.update(model.sampling_params)
    return body


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    if not ctx.auth.api_key:
        raise StreamError(f"No API key for provider: {model.provider}")
    body = build_body(model, ctx)
    version = ctx.env_value("AZURE_OPENAI_API_VERSION") or DEFAULT_API_VERSION
    headers = merge_headers({"Accept": "application/json"}, model.static_headers, ctx.options_headers,
                            {"api-key": ctx.auth.api_key})
    url = f"{resolve_base_url(model, ctx)}/responses?api-version={quote(version, safe='')}"
    return HttpRequest(url=url, headers=headers, body=body, secrets=(*ctx.auth.secrets, *ctx.headers.values()))


class AzureParser(ResponsesParser):
    prices_service_tier = False
    error_prefix = "Azure OpenAI API error"
    unfinished = "Azure OpenAI Responses stream ended without a stop reason"


Parser = AzureParser
