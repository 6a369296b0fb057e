"""OpenAI Codex (ChatGPT Plus/Pro), pi-ai ``auth/oauth/openai-codex.ts``: a choice of a browser login
(PKCE, loopback redirect on ``localhost:1455/auth/callback`` raced against a pasted code) or a
device code (OpenAI's own device flow: a user code, then an authorization code and verifier to
exchange). Tokens are exchanged and refreshed with RFC 6749 form requests; the stored credential
carries the ChatGPT account id from the access token's claims (``accountId``).

Endpoints: ``RPCD_OAUTH_OPENAI_CODEX_AUTH_URL`` (``https://auth.openai.com``: authorize, token and
device endpoints under it).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Final

from rpcd.providers.oauth import FLOWS, Credential, Interaction, LoginCancelled, OAuthAuth, OAuthError
from rpcd.providers.oauth import common as c

PROVIDER: Final = "openai-codex"
CLIENT_ID: Final = "app_EMoamEEZ73f0CkXaXp7hrann"
AUTH_BASE_URL: Final = "https://auth.openai.com"
CALLBACK_PORT: Final = 1455
CALLBACK_PATH: Final = "/auth/callback"
SCOPE: Final = "openid profile email offline_access"
JWT_CLAIM_PATH: Final = "https://api.openai.com/auth"
DEVICE_TIMEOUT_S: Final = 15 * 60
BROWSER: Final = "browser"
DEVICE_CODE: Final = "device_code"


def _base(env: Mapping[str, str]) -> str:
    return c.endpoint(PROVIDER, "auth_url", AUTH_BASE_URL, env).rstrip("/")


def account_id(access: str) -> str | None:
    claims = c.jwt_claims(access)
    auth = claims.get(JWT_CLAIM_PATH) if claims is not None else None
    found = auth.get("chatgpt_account_id") if isinstance(auth, Mapping) else None
    return found if isinstance(found, str) and found else None


async def _token(env: Mapping[str, str], form: Mapping[str, str], operation: str) -> Credential:
    step = {"exchange": "OpenAI Codex code exchange", "refresh": "OpenAI Codex login refresh"}[operation]
    answer = await c.request("POST", f"{_base(env)}/oauth/token", form=form, what=step)
    if not answer.ok:
        raise OAuthError(f"{step} failed ({answer.status}): {_error(answer)}")
    data = answer.object()
    access, refresh, expires_in = data.get("access_token"), data.get("refresh_token"), data.get("expires_in")
    if not isinstance(access, str) or not access or not isinstance(refresh, str) or not refresh or \
            not isinstance(expires_in, int | float) or isinstance(expires_in, bool):
        raise OAuthError(f"{step} response missing fields")
    account = account_id(access)
    if account is None:
        raise OAuthError("Failed to extract accountId from token")
    return {"type": "oauth", "access": access, "refresh": refresh,
            "expires": c.now_ms() + int(expires_in * 1000), "accountId": account}


def _error(answer: c.Answer) -> str:
    body = answer.object()
    error = body.get("error")
    if isinstance(error, Mapping):
        return str(error.get("message") or error.get("code") or answer.reason)
    parts = [str(x) for x in (error, body.get("error_description")) if x]
    return ": ".join(parts) or answer.reason or "request failed"


class CodexFlow:
    provider = PROVIDER
    name = FLOWS[PROVIDER].name
    subscription = FLOWS[PROVIDER].subscription

    async def login(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        method = await interaction.prompt({"type": "select", "message": "Select OpenAI Codex login method:",
                                           "options": [{"id": BROWSER, "label": "Browser login (default)"},
                                                       {"id": DEVICE_CODE, "label": "Device code login (headless)"}]})
        if method == DEVICE_CODE:
            return await self._device_code(interaction, env)
        if method != BROWSER:
            raise OAuthError(f"Unknown OpenAI Codex login method: {method}")
        return await self._browser(interaction, env)

    async def _browser(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        keys = c.pkce()
        state = secrets.token_hex(16)
        port = c.callback_port(PROVIDER, CALLBACK_PORT, env)

        async def on_redirect(path: str, query: Mapping[str, str]) -> tuple[int, str, Any]:
            if path != CALLBACK_PATH:
                return 404, c.page("Not found", "Callback route not found."), None
            if query.get("state") != state:
                return 400, c.page("Login failed", "State mismatch."), None
            if not query.get("code"):
                return 400, c.page("Login failed", "Missing authorization code."), None
            return 200, c.page("Signed in", "OpenAI authentication completed. You can close this window."), \
                query["code"]

        async with c.CallbackServer(c.callback_host(env), port, on_redirect) as server:
            redirect_uri = f"http://localhost:{server.port if server else port}{CALLBACK_PATH}"
            url = c.authorize_url(f"{_base(env)}/oauth/authorize", [
                ("response_type", "code"), ("client_id", CLIENT_ID), ("redirect_uri", redirect_uri),
                ("scope", SCOPE), ("code_challenge", keys.challenge), ("code_challenge_method", "S256"),
                ("state", state), ("id_token_add_organizations", "true"), ("codex_cli_simplified_flow", "true"),
                ("originator", "pi")])
            interaction.notify({"type": "auth_url", "url": url,
                                "instructions": "A browser window should open. Complete login to finish."})
            how, result = await c.code_from_browser_or_paste(server, interaction, {
                "type": "manual_code",
                "message": "Complete login in your browser, or paste the authorization code / redirect URL here:",
                "placeholder": redirect_uri})
        if how == "callback":
            code = result
        else:
            code, pasted_state = c.parse_authorization_input(str(result))
            if pasted_state and pasted_state != state:
                raise OAuthError("State mismatch")
        if not code:
            raise LoginCancelled("Missing authorization code")
        return await _token(env, c.token_form("authorization_code", client_id=CLIENT_ID, code=code,
                                              code_verifier=keys.verifier, redirect_uri=redirect_uri), "exchange")

    async def _device_code(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        base = _base(env)
        answer = await c.request("POST", f"{base}/api/accounts/deviceauth/usercode", json_body={"client_id": CLIENT_ID},
                                 what="OpenAI Codex device code request")
        if not answer.ok:
            if answer.status == 404:
                raise OAuthError("OpenAI Codex device code login is not enabled for this server. Use browser login "
                                 "or verify the server URL.")
            raise OAuthError(f"OpenAI Codex device code request failed with status {answer.status}")
        data = answer.object()
        interval = data.get("interval")
        if isinstance(interval, str):
            try:
                interval = float(interval.strip())
            except ValueError:
                interval = None
        device_id, user_code = data.get("device_auth_id"), data.get("user_code")
        if not isinstance(device_id, str) or not isinstance(user_code, str) or not isinstance(interval, int | float) \
                or interval < 0:
            raise OAuthError("Invalid OpenAI Codex device code response")
        interaction.notify({"type": "device_code", "userCode": user_code, "verificationUri": f"{base}/codex/device",
                            "intervalSeconds": interval, "expiresInSeconds": DEVICE_TIMEOUT_S})

        async def poll() -> c.Poll:
            reply = await c.request("POST", f"{base}/api/accounts/deviceauth/token",
                                    json_body={"device_auth_id": device_id, "user_code": user_code},
                                    what="OpenAI Codex device auth")
            if reply.ok:
                body = reply.object()
                if not isinstance(body.get("authorization_code"), str) or not isinstance(body.get("code_verifier"),
                                                                                         str):
                    return c.Poll("failed", message="Invalid OpenAI Codex device auth response")
                return c.Poll("complete", (body["authorization_code"], body["code_verifier"]))
            if reply.status in (403, 404):
                return c.Poll("pending")
            error = reply.object().get("error")
            code = error.get("code") if isinstance(error, Mapping) else error
            if code == "deviceauth_authorization_pending":
                return c.Poll("pending")
            if code == "slow_down":
                return c.Poll("slow_down")
            return c.Poll("failed", message=f"OpenAI Codex device auth failed with status {reply.status}")

        code, verifier = await c.poll_device_code(poll, interval=float(interval), expires_in=DEVICE_TIMEOUT_S)
        return await _token(env, c.token_form("authorization_code", client_id=CLIENT_ID, code=code,
                                              code_verifier=verifier, redirect_uri=f"{base}/deviceauth/callback"),
                            "exchange")

    async def refresh(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> Credential:
        return await _token(env, c.token_form("refresh_token", refresh_token=str(credential.get("refresh") or ""),
                                              client_id=CLIENT_ID), "refresh")

    def to_auth(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> OAuthAuth:
        return OAuthAuth(api_key=str(credential.get("access") or ""))


FLOW: Final = CodexFlow()
