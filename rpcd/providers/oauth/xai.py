"""xAI (SuperGrok / X Premium), pi-ai ``auth/oauth/xai.ts``: the RFC 8628 device flow at
``auth.x.ai`` (form requests), refreshed with the refresh token (kept when the answer has none).

Endpoints: ``RPCD_OAUTH_XAI_DEVICE_URL``, ``RPCD_OAUTH_XAI_TOKEN_URL``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rpcd.providers.oauth import FLOWS, Credential, Interaction, OAuthAuth, OAuthError
from rpcd.providers.oauth import common as c

PROVIDER: Final = "xai"
CLIENT_ID: Final = "b1a00492-073a-47ea-816f-4c329264a828"
SCOPE: Final = "openid profile email offline_access grok-cli:access api:access"
DEVICE_URL: Final = "https://auth.x.ai/oauth2/device/code"
TOKEN_URL: Final = "https://auth.x.ai/oauth2/token"
EXPIRY_SKEW_MS: Final = 5 * 60 * 1000
DEFAULT_LIFETIME_S: Final = 3600


def _failure(action: str, answer: c.Answer) -> OAuthError:
    body = answer.object()
    detail = ": ".join(str(body[k]) for k in ("error", "error_description") if isinstance(body.get(k), str))
    return OAuthError(f"xAI OAuth {action} failed (HTTP {answer.status}){f': {detail}' if detail else ''}")


def _string(body: Mapping[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or not value:
        raise OAuthError(f"Invalid xAI OAuth response field: {field}")
    return value


def _positive(body: Mapping[str, Any], field: str) -> float:
    value = body.get(field)
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise OAuthError(f"Invalid xAI OAuth response field: {field}")
    return float(value)


def _credential(body: Mapping[str, Any], previous_refresh: str | None = None) -> Credential:
    access = _string(body, "access_token")
    refresh = previous_refresh if body.get("refresh_token") is None and previous_refresh else _string(
        body, "refresh_token")
    lifetime = DEFAULT_LIFETIME_S if body.get("expires_in") is None else _positive(body, "expires_in")
    return {"type": "oauth", "access": access, "refresh": refresh,
            "expires": c.now_ms() + int(lifetime * 1000) - EXPIRY_SKEW_MS}


async def _post(url: str, form: Mapping[str, str], what: str) -> c.Answer:
    answer = await c.request("POST", url, form=form, headers={"Accept": "application/json"}, what=what)
    if answer.json() is None and answer.text.strip():
        raise OAuthError(f"xAI OAuth returned invalid JSON (HTTP {answer.status})")
    return answer


class XaiFlow:
    provider = PROVIDER
    name = FLOWS[PROVIDER].name
    subscription = FLOWS[PROVIDER].subscription

    async def login(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        answer = await _post(c.endpoint(PROVIDER, "device_url", DEVICE_URL, env),
                             {"client_id": CLIENT_ID, "scope": SCOPE, "referrer": "pi"}, "xAI device authorization")
        if not answer.ok:
            raise _failure("device authorization", answer)
        body = answer.object()
        device_code, user_code = _string(body, "device_code"), _string(body, "user_code")
        uri = c.trusted_url(_string(body, "verification_uri"), https_only=True)
        complete = body.get("verification_uri_complete")
        complete_uri = c.trusted_url(complete, https_only=True) if isinstance(complete, str) and complete else None
        if uri is None or (isinstance(complete, str) and complete and complete_uri is None):
            raise OAuthError("Untrusted verification URI in xAI OAuth response")
        interval = body.get("interval") if isinstance(body.get("interval"), int | float) and body["interval"] > 0 \
            else None
        expires = _positive(body, "expires_in")
        interaction.notify({"type": "device_code", "userCode": user_code, "verificationUri": complete_uri or uri,
                            "intervalSeconds": interval, "expiresInSeconds": expires})
        token_url = c.endpoint(PROVIDER, "token_url", TOKEN_URL, env)

        async def poll() -> c.Poll:
            reply = await _post(token_url, c.token_form("urn:ietf:params:oauth:grant-type:device_code",
                                                        client_id=CLIENT_ID, device_code=device_code),
                                "xAI device polling")
            if reply.ok:
                return c.Poll("complete", _credential(reply.object()))
            error = reply.object().get("error")
            if error == "authorization_pending":
                return c.Poll("pending")
            if error == "slow_down":
                step = reply.object().get("interval")
                return c.Poll("slow_down", interval=float(step) if isinstance(step, int | float) else None)
            if error in ("access_denied", "authorization_denied"):
                return c.Poll("failed", message="xAI device authorization was denied")
            if error == "expired_token":
                return c.Poll("failed", message="xAI device code expired")
            return c.Poll("failed", message=str(_failure("device polling", reply)))

        credential: Credential = await c.poll_device_code(poll, interval=interval, expires_in=expires,
                                                          wait_first=True)
        return credential

    async def refresh(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> Credential:
        refresh = str(credential.get("refresh") or "")
        answer = await _post(c.endpoint(PROVIDER, "token_url", TOKEN_URL, env),
                             c.token_form("refresh_token", client_id=CLIENT_ID, refresh_token=refresh),
                             "xAI login refresh")
        if not answer.ok:
            raise _failure("login refresh", answer)
        return _credential(answer.object(), refresh)

    def to_auth(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> OAuthAuth:
        return OAuthAuth(api_key=str(credential.get("access") or ""))


FLOW: Final = XaiFlow()
