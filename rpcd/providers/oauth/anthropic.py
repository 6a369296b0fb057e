"""Anthropic (Claude Pro/Max), pi-ai ``auth/oauth/anthropic.ts``: PKCE with a loopback redirect on
``localhost:53692/callback`` raced against a pasted code (``code#state`` or the redirect URL);
the code and, later, the refresh token are exchanged at Anthropic's token endpoint (a JSON body).
The stored access token is sent as an ``sk-ant-oat`` key (Claude Code's identity: ``anthropic``).

Endpoints: ``RPCD_OAUTH_ANTHROPIC_AUTHORIZE_URL``, ``RPCD_OAUTH_ANTHROPIC_TOKEN_URL``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Final

from rpcd.providers.oauth import FLOWS, Credential, Interaction, LoginCancelled, OAuthAuth, OAuthError
from rpcd.providers.oauth import common as c

PROVIDER: Final = "anthropic"
CLIENT_ID: Final = base64.b64decode("OWQxYzI1MGEtZTYxYi00NGQ5LTg4ZWQtNTk0NGQxOTYyZjVl").decode()
AUTHORIZE_URL: Final = "https://claude.ai/oauth/authorize"
TOKEN_URL: Final = "https://platform.claude.com/v1/oauth/token"
CALLBACK_PORT: Final = 53692
CALLBACK_PATH: Final = "/callback"
SCOPES: Final = ("org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers "
                 "user:file_upload")
EXPIRY_SKEW_MS: Final = 5 * 60 * 1000


def _credential(data: Mapping[str, Any]) -> Credential:
    access, refresh, expires_in = data.get("access_token"), data.get("refresh_token"), data.get("expires_in")
    if not isinstance(access, str) or not isinstance(refresh, str) or not isinstance(expires_in, int | float):
        raise OAuthError("Anthropic token response is missing access_token, refresh_token or expires_in")
    return {"type": "oauth", "refresh": refresh, "access": access,
            "expires": c.now_ms() + int(expires_in * 1000) - EXPIRY_SKEW_MS}


async def _post(url: str, body: Mapping[str, str], what: str) -> Credential:
    answer = await c.request("POST", url, json_body=dict(body), headers={"Accept": "application/json"}, what=what)
    if not answer.ok:
        raise OAuthError(f"{what} failed: HTTP {answer.status} {_detail(answer)}".rstrip())
    data = answer.json()
    if not isinstance(data, dict):
        raise OAuthError(f"{what} returned invalid JSON")
    return _credential(data)


def _detail(answer: c.Answer) -> str:
    body = answer.object()
    error: Any = body.get("error")
    description: Any = body.get("error_description")
    if isinstance(error, Mapping):
        error, description = error.get("type"), error.get("message")
    return ": ".join(str(x) for x in (error, description) if x)


class AnthropicFlow:
    provider = PROVIDER
    name = FLOWS[PROVIDER].name
    subscription = FLOWS[PROVIDER].subscription

    async def login(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        keys = c.pkce()
        port = c.callback_port(PROVIDER, CALLBACK_PORT, env)
        token_url = c.endpoint(PROVIDER, "token_url", TOKEN_URL, env)

        async def on_redirect(path: str, query: Mapping[str, str]) -> tuple[int, str, Any]:
            if path != CALLBACK_PATH:
                return 404, c.page("Not found", "Callback route not found."), None
            if query.get("error"):
                return 400, c.page("Login failed", "Anthropic authentication did not complete.",
                                   f"Error: {query['error']}"), None
            if not query.get("code") or not query.get("state"):
                return 400, c.page("Login failed", "Missing code or state parameter."), None
            if query["state"] != keys.verifier:
                return 400, c.page("Login failed", "State mismatch."), None
            return 200, c.page("Signed in", "Anthropic authentication completed. You can close this window."), (
                query["code"], query["state"])

        async with c.CallbackServer(c.callback_host(env), port, on_redirect) as server:
            redirect_uri = f"http://localhost:{server.port if server else port}{CALLBACK_PATH}"
            url = c.authorize_url(c.endpoint(PROVIDER, "authorize_url", AUTHORIZE_URL, env), [
                ("code", "true"), ("client_id", CLIENT_ID), ("response_type", "code"), ("redirect_uri", redirect_uri),
                ("scope", SCOPES), ("code_challenge", keys.challenge), ("code_challenge_method", "S256"),
                ("state", keys.verifier)])
            interaction.notify({"type": "auth_url", "url": url,
                                "instructions": "Complete login in your browser. If the browser is on another "
                                                "machine, paste the final redirect URL here."})
            how, result = await c.code_from_browser_or_paste(server, interaction, {
                "type": "manual_code",
                "message": "Complete login in your browser, or paste the authorization code / redirect URL here:",
                "placeholder": redirect_uri})
        if how == "callback":
            code, state = result
        else:
            code, state = c.parse_authorization_input(str(result))
            if state and state != keys.verifier:
                raise OAuthError("OAuth state mismatch")
            state = state or keys.verifier
        if not code:
            raise LoginCancelled("Missing authorization code")
        interaction.notify({"type": "progress", "message": "Exchanging authorization code for tokens..."})
        return await _post(token_url, {"grant_type": "authorization_code", "client_id": CLIENT_ID, "code": code,
                                       "state": state, "redirect_uri": redirect_uri,
                                       "code_verifier": keys.verifier}, "Anthropic code exchange")

    async def refresh(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> Credential:
        return await _post(c.endpoint(PROVIDER, "token_url", TOKEN_URL, env),
                           {"grant_type": "refresh_token", "client_id": CLIENT_ID,
                            "refresh_token": str(credential.get("refresh") or "")}, "Anthropic login refresh")

    def to_auth(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> OAuthAuth:
        return OAuthAuth(api_key=str(credential.get("access") or ""))


FLOW: Final = AnthropicFlow()
