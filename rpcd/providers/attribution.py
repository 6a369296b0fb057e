"""The headers pi-coding-agent adds to every model call of some providers
(``provider-attribution.ts``, applied by the session's ``streamFn``), whatever the API:

* OpenRouter (provider ``openrouter`` or a base URL containing ``openrouter.ai``):
  ``HTTP-Referer: https://pi.dev``, ``X-OpenRouter-Title: pi``, ``X-OpenRouter-Categories: cli-agent``;
* NVIDIA NIM (``nvidia`` or host ``integrate.api.nvidia.com``): ``X-BILLING-INVOKE-ORIGIN: Pi``;
* Cloudflare (``cloudflare-workers-ai`` / ``cloudflare-ai-gateway`` or their hosts):
  ``User-Agent: pi-coding-agent``;

only while install telemetry is on (``PI_TELEMETRY`` if set, else settings
``enableInstallTelemetry``, default on); and for opencode (``opencode`` / ``opencode-go`` or host
``opencode.ai``) always ``x-opencode-session: <session id>`` and ``x-opencode-client: pi``.
They sit under the credential and configured headers, which win on a clash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit


def _host_is(base_url: str, host: str) -> bool:
    try:
        return urlsplit(base_url).hostname == host
    except ValueError:
        return False


def install_telemetry_enabled(settings: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """pi-coding-agent ``isInstallTelemetryEnabled``."""
    flag = env.get("PI_TELEMETRY")
    if flag is not None:
        return flag == "1" or flag.lower() in ("true", "yes")
    value = settings.get("enableInstallTelemetry")
    return True if value is None else bool(value)


def attribution_headers(provider: str, base_url: str, session_id: str, *, telemetry: bool) -> dict[str, str]:
    headers: dict[str, str] = {}
    if session_id and (provider in ("opencode", "opencode-go") or _host_is(base_url, "opencode.ai")):
        headers.update({"x-opencode-session": session_id, "x-opencode-client": "pi"})
    if not telemetry:
        return headers
    if provider == "openrouter" or "openrouter.ai" in base_url:
        headers.update({"HTTP-Referer": "https://pi.dev", "X-OpenRouter-Title": "pi",
                        "X-OpenRouter-Categories": "cli-agent"})
    elif provider == "nvidia" or _host_is(base_url, "integrate.api.nvidia.com"):
        headers["X-BILLING-INVOKE-ORIGIN"] = "Pi"
    elif provider in ("cloudflare-workers-ai", "cloudflare-ai-gateway") or _host_is(
            base_url, "api.cloudflare.com") or _host_is(base_url, "gateway.ai.cloudflare.com"):
        headers["User-Agent"] = "pi-coding-agent"
    return headers
