"""Kimi Code (subscription), pi-ai ``auth/oauth/kimi-coding.ts``: the RFC 8628 device flow at
``https://auth.kimi.com`` (``KIMI_CODE_OAUTH_HOST`` / ``KIMI_OAUTH_HOST`` move it, as in Pi); the
access token is sent as ``Authorization: Bearer``; a refresh retries 429/5xx up to 3 times.

Endpoints: ``RPCD_OAUTH_KIMI_CODING_HOST_URL`` (or Pi's variables above).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import anyio

from rpcd.providers.oauth import FLOWS, Credential, Interaction, OAuthAuth, OAuthError
from rpcd.providers.oauth import common as c

PROVIDER: Final = "kimi-coding"
CLIENT_ID: Final = "17e5f671-d194-4dfb-9706-5516cb48c098"
HOST: Final = "https://auth.kimi.com"
DEVICE_TIMEOUT_S: Final = 15 * 60
POLL_INTERVAL_S: Final = 5.0
REFRESH_RETRIES: Final = 3
HEADERS: Final = {"Accept": "application/json"}


def _host(env: Mapping[str, str]) -> str:
    pi_host = env.get("KIMI_CODE_OAUTH_HOST") or env.get("KIMI_OAUTH_HOST")
    return c.endpoint(PROVIDER, "host_url", pi_host or HOST, env).rstrip("/")


def _tokens(body: Mapping[str, Any], operation: str) -> Credential:
    access, refresh, expires_in = body.get("access_token"), body.get("refresh_token"), body.get("expires_in")
    if not isinstance(access, str) or not access or not isinstance(refresh, str) or not refresh or \
            not isinstance(expires_in, int | float) or expires_in <= 0:
        raise OAuthError(f"Kimi Code {operation} response missing fields")
    return {"type": "oauth", "access": access, "refresh": refresh, "expires": c.now_ms() + int(expires_in * 1000)}


class KimiFlow:
    provider = PROVIDER
    name = FLOWS[PROVIDER].name
    subscription = FLOWS[PROVIDER].subscription

    async def login(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        host = _host(env)
        answer = await c.request("POST", f"{host}/api/oauth/device_authorization", form={"client_id": CLIENT_ID},
                                 headers=HEADERS, what="Kimi Code device authorization")
        if not answer.ok:
            raise OAuthError(f"Kimi Code device authorization failed with status {answer.status}")
        body = answer.object()
        complete = c.trusted_url(body.get("verification_uri_complete"))
        if not isinstance(body.get("device_code"), str) or not isinstance(body.get("user_code"), str) or \
                complete is None or c.trusted_url(body.get("verification_uri")) is None:
            raise OAuthError("Invalid Kimi Code device authorization response")
        interval = body.get("interval")
        expires = body.get("expires_in")
        interval = float(interval) if isinstance(interval, int | float) and interval > 0 else POLL_INTERVAL_S
        expires = float(expires) if isinstance(expires, int | float) and expires > 0 else DEVICE_TIMEOUT_S
        interaction.notify({"type": "device_code", "userCode": body["user_code"], "verificationUri": complete,
                            "intervalSeconds": interval, "expiresInSeconds": expires})
        device_code = body["device_code"]

        async def poll() -> c.Poll:
            reply = await c.request("POST", f"{host}/api/oauth/token", headers=HEADERS, what="Kimi Code device poll",
                                    form=c.token_form("urn:ietf:params:oauth:grant-type:device_code",
                                                      client_id=CLIENT_ID, device_code=device_code))
            if reply.status >= 500:
                return c.Poll("failed", message=f"Kimi Code device poll failed with status {reply.status}")
            data = reply.object()
            if reply.ok and isinstance(data.get("access_token"), str):
                return c.Poll("complete", _tokens(data, "poll"))
            error = data.get("error")
            if error == "authorization_pending":
                return c.Poll("pending")
            if error == "slow_down":
                step = data.get("interval")
                return c.Poll("slow_down", interval=float(step) if isinstance(step, int | float) and step > 0 else None)
            if error == "expired_token":
                return c.Poll("failed", message="Kimi Code device authorization expired. Please restart login.")
            if error == "access_denied":
                return c.Poll("failed", message="Kimi Code login was denied.")
            return c.Poll("failed", message=f"Kimi Code device poll failed (status {reply.status})")

        credential: Credential = await c.poll_device_code(poll, interval=interval, expires_in=expires,
                                                          wait_first=True)
        return credential

    async def refresh(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> Credential:
        host = _host(env)
        form = c.token_form("refresh_token", client_id=CLIENT_ID, refresh_token=str(credential.get("refresh") or ""))
        last = "Kimi Code login refresh failed"
        for attempt in range(REFRESH_RETRIES + 1):
            if attempt:
                await anyio.sleep(2 ** (attempt - 1))
            try:
                reply = await c.request("POST", f"{host}/api/oauth/token", form=form, headers=HEADERS,
                                        what="Kimi Code login refresh")
            except OAuthError as exc:
                last = str(exc)
                continue
            data = reply.object()
            if reply.ok:
                return _tokens(data, "refresh")
            if reply.status in (401, 403) or data.get("error") == "invalid_grant":
                raise OAuthError(f"Kimi Code login refresh unauthorized (status {reply.status})")
            if (reply.status == 429 or reply.status >= 500) and attempt < REFRESH_RETRIES:
                last = f"Kimi Code login refresh failed with status {reply.status}"
                continue
            raise OAuthError(f"Kimi Code login refresh failed with status {reply.status}")
        raise OAuthError(last)

    def to_auth(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> OAuthAuth:
        return OAuthAuth(headers={"Authorization": f"Bearer {credential.get('access') or ''}"})


FLOW: Final = KimiFlow()
