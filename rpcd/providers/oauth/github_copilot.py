"""GitHub Copilot, pi-ai ``auth/oauth/github-copilot.ts``: an optional GitHub Enterprise domain, the
RFC 8628 device flow at ``https://<domain>/login/device/code`` for a GitHub token (stored as the
``refresh`` value), exchanged at ``https://api.<domain>/copilot_internal/v2/token`` for a Copilot
token (the ``access`` value, ~30 min). Its ``proxy-ep`` names the account's API endpoint, which
replaces the models' base URL. After a login the models the account may use are listed
(``availableModelIds``) and those still "unconfigured" by policy are enabled, as Pi does.

Endpoints: ``RPCD_OAUTH_GITHUB_COPILOT_GITHUB_URL`` (``https://<domain>``: device code and access
token), ``RPCD_OAUTH_GITHUB_COPILOT_TOKEN_URL`` (the Copilot token exchange),
``RPCD_OAUTH_GITHUB_COPILOT_API_URL`` (the API endpoint, instead of the one the token names).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from rpcd.providers.assembly import mapping_field
from rpcd.providers.oauth import FLOWS, Credential, Interaction, LoginCancelled, OAuthAuth, OAuthError
from rpcd.providers.oauth import common as c

PROVIDER: Final = "github-copilot"
CLIENT_ID: Final = base64.b64decode("SXYxLmI1MDdhMDhjODdlY2ZlOTg=").decode()
HEADERS: Final = {"User-Agent": "GitHubCopilotChat/0.35.0", "Editor-Version": "vscode/1.107.0",
                  "Editor-Plugin-Version": "copilot-chat/0.35.0", "Copilot-Integration-Id": "vscode-chat"}
API_VERSION: Final = "2026-06-01"
DEFAULT_API: Final = "https://api.individual.githubcopilot.com"
EXPIRY_SKEW_MS: Final = 5 * 60 * 1000


def normalize_domain(value: str) -> str | None:
    text = value.strip()
    if not text:
        return None
    parts = urlsplit(text if "://" in text else f"https://{text}")
    return parts.hostname or None


def _github(domain: str, env: Mapping[str, str]) -> str:
    return c.endpoint(PROVIDER, "github_url", f"https://{domain}", env).rstrip("/")


def _token_url(domain: str, env: Mapping[str, str]) -> str:
    return c.endpoint(PROVIDER, "token_url", f"https://api.{domain}/copilot_internal/v2/token", env)


def api_base(token: str, enterprise: str | None, env: Mapping[str, str]) -> str:
    """pi-ai ``getGitHubCopilotBaseUrl``: the token's ``proxy-ep`` (``proxy.`` → ``api.``), else the
    enterprise's, else the individual endpoint."""
    override = c.endpoint(PROVIDER, "api_url", "", env)
    if override:
        return override.rstrip("/")
    match = re.search(r"proxy-ep=([^;]+)", token)
    if match:
        return "https://" + re.sub(r"^proxy\.", "api.", match.group(1))
    if enterprise:
        return f"https://copilot-api.{enterprise}"
    return DEFAULT_API


def _enterprise(credential: Mapping[str, Any]) -> str | None:
    value = credential.get("enterpriseUrl")
    return normalize_domain(value) if isinstance(value, str) and value else None


async def _json(method: str, url: str, what: str, **kwargs: Any) -> dict[str, Any]:
    answer = await c.request(method, url, what=what, **kwargs)
    if not answer.ok:
        raise OAuthError(f"{what} failed: {answer.status} {answer.reason}")
    body = answer.json()
    if not isinstance(body, dict):
        raise OAuthError(f"{what}: invalid response")
    return body


async def copilot_token(github_token: str, enterprise: str | None, env: Mapping[str, str]) -> Credential:
    body = await _json("GET", _token_url(enterprise or "github.com", env), "Copilot exchange",
                       headers={"Accept": "application/json", "Authorization": f"Bearer {github_token}", **HEADERS})
    token, expires_at = body.get("token"), body.get("expires_at")
    if not isinstance(token, str) or not isinstance(expires_at, int | float) or isinstance(expires_at, bool):
        raise OAuthError("Invalid Copilot exchange response fields")
    credential: Credential = {"type": "oauth", "refresh": github_token, "access": token,
                              "expires": int(expires_at * 1000) - EXPIRY_SKEW_MS}
    if enterprise is not None:
        credential["enterpriseUrl"] = enterprise
    return credential


async def _models(token: str, enterprise: str | None, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """pi-ai ``fetchGitHubCopilotModels``: the picker models, and those whose policy is unconfigured."""
    from rpcd.providers.catalog import builtin_catalog

    base = api_base(token, enterprise, env)
    body = await _json("GET", f"{base}/models", "Copilot model listing",
                       headers={"Accept": "application/json", "Authorization": f"Bearer {token}", **HEADERS,
                                "X-GitHub-Api-Version": API_VERSION})
    data = body.get("data")
    if not isinstance(data, list):
        raise OAuthError("Invalid Copilot models response")
    known = {m["id"] for m in builtin_catalog().providers[PROVIDER].models}
    models = []
    for item in data:
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            continue
        supports = mapping_field(mapping_field(item.get("capabilities")).get("supports"))
        if supports.get("tool_calls") is False:
            continue
        policy = mapping_field(item.get("policy"))
        models.append((item["id"], item.get("model_picker_enabled") is True, policy.get("state")))
    picker = [mid for mid, enabled, state in models if enabled and state != "disabled"]
    fallback = base == DEFAULT_API and not picker
    available = picker if picker or base != DEFAULT_API else [mid for mid, _, state in models if state == "enabled"]
    unconfigured = [mid for mid, enabled, state in models if state == "unconfigured" and mid in known
                    and (enabled or fallback)]
    return available, unconfigured


async def _enable(token: str, model_ids: list[str], enterprise: str | None, env: Mapping[str, str]) -> list[str]:
    base = api_base(token, enterprise, env)
    enabled = []
    for model_id in model_ids:
        answer = await c.request("POST", f"{base}/models/{model_id}/policy", json_body={"state": "enabled"},
                                 headers={"Authorization": f"Bearer {token}", **HEADERS,
                                          "openai-intent": "chat-policy", "x-interaction-type": "chat-policy"},
                                 what="Copilot model policy")
        if answer.status == 429:
            break
        if answer.ok:
            enabled.append(model_id)
    return enabled


class CopilotFlow:
    provider = PROVIDER
    name = FLOWS[PROVIDER].name
    subscription = FLOWS[PROVIDER].subscription

    async def login(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        answer = await interaction.prompt({"type": "text", "message": "GitHub Enterprise URL/domain (blank for "
                                                                      "github.com)", "placeholder": "company.ghe.com"})
        enterprise = normalize_domain(answer)
        if answer.strip() and enterprise is None:
            raise OAuthError("Invalid GitHub Enterprise URL/domain")
        domain = enterprise or "github.com"
        github = _github(domain, env)
        form_headers = {"Accept": "application/json", "User-Agent": HEADERS["User-Agent"]}
        device = await _json("POST", f"{github}/login/device/code", "Device code request", headers=form_headers,
                             form={"client_id": CLIENT_ID, "scope": "read:user"})
        code, user_code = device.get("device_code"), device.get("user_code")
        uri, interval, expires = device.get("verification_uri"), device.get("interval"), device.get("expires_in")
        if not isinstance(code, str) or not isinstance(user_code, str) or not isinstance(expires, int | float) or (
                interval is not None and not isinstance(interval, int | float)):
            raise OAuthError("Invalid device code response fields")
        verification = c.trusted_url(uri)
        if verification is None:
            raise OAuthError("Untrusted verification_uri in device code response")
        interaction.notify({"type": "device_code", "userCode": user_code, "verificationUri": verification,
                            "intervalSeconds": interval, "expiresInSeconds": expires})

        async def poll() -> c.Poll:
            raw = await _json("POST", f"{github}/login/oauth/access_token", "Device poll",
                              headers=form_headers, form=c.token_form(
                                  "urn:ietf:params:oauth:grant-type:device_code", client_id=CLIENT_ID,
                                  device_code=code))
            if isinstance(raw.get("access_token"), str):
                return c.Poll("complete", raw["access_token"])
            error = raw.get("error")
            if isinstance(error, str):
                if error == "authorization_pending":
                    return c.Poll("pending")
                if error == "slow_down":
                    step = raw.get("interval")
                    return c.Poll("slow_down", interval=float(step) if isinstance(step, int | float) else None)
                suffix = f": {raw['error_description']}" if raw.get("error_description") else ""
                return c.Poll("failed", message=f"Device flow failed: {error}{suffix}")
            return c.Poll("failed", message="Invalid device poll response")

        github_token = await c.poll_device_code(poll, interval=interval, expires_in=expires, wait_first=True)
        if not isinstance(github_token, str):
            raise LoginCancelled("Login cancelled")
        credential = await copilot_token(github_token, enterprise, env)
        available, unconfigured = await _models(credential["access"], enterprise, env)
        enabled: list[str] = []
        if unconfigured:
            interaction.notify({"type": "progress", "message": "Enabling models..."})
            enabled = await _enable(credential["access"], unconfigured, enterprise, env)
        credential["availableModelIds"] = list(dict.fromkeys([*available, *enabled]))
        return credential

    async def refresh(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> Credential:
        enterprise = _enterprise(credential)
        fresh = await copilot_token(str(credential.get("refresh") or ""), enterprise, env)
        fresh["availableModelIds"], _ = await _models(fresh["access"], enterprise, env)
        return fresh

    def to_auth(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> OAuthAuth:
        access = str(credential.get("access") or "")
        return OAuthAuth(api_key=access, base_url=api_base(access, _enterprise(credential), env))


FLOW: Final = CopilotFlow()


def filter_models(model_ids: list[str], credential: Mapping[str, Any] | None) -> list[str]:
    """pi-ai's Copilot ``filterModels``: with an OAuth login, only the models it lists (``availableModelIds``)."""
    if credential is None or credential.get("type") != "oauth":
        return model_ids
    available = credential.get("availableModelIds")
    if not isinstance(available, list) or not all(isinstance(x, str) for x in available):
        return model_ids
    allowed = set(available)
    return [m for m in model_ids if m in allowed]
