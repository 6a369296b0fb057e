"""OpenRouter, pi-ai ``auth/oauth/openrouter.ts``: PKCE with a loopback callback on an ephemeral
port (``/oauth/callback/<uuid>``) raced against a pasted code; the code is exchanged for a
permanent, user-controlled API key (stored as an OAuth entry that never expires, no refresh).

Endpoints: ``RPCD_OAUTH_OPENROUTER_AUTHORIZE_URL``, ``RPCD_OAUTH_OPENROUTER_TOKEN_URL``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Final

from rpcd.providers.oauth import FLOWS, Credential, Interaction, LoginCancelled, OAuthAuth, OAuthError
from rpcd.providers.oauth import common as c

PROVIDER: Final = "openrouter"
AUTHORIZE_URL: Final = "https://openrouter.ai/auth"
TOKEN_URL: Final = "https://openrouter.ai/api/v1/auth/keys"
NEVER: Final = 9007199254740991
"""JavaScript's ``Number.MAX_SAFE_INTEGER``: the expiry Pi stores for a key that does not expire."""


def _detail(body: Mapping[str, Any]) -> str | None:
    for key in ("error_description", "message", "error"):
        if isinstance(body.get(key), str):
            return str(body[key])
    error = body.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    return None


async def _exchange(code: str, verifier: str, env: Mapping[str, str]) -> Credential:
    answer = await c.request("POST", c.endpoint(PROVIDER, "token_url", TOKEN_URL, env),
                             json_body={"code": code, "code_verifier": verifier, "code_challenge_method": "S256"},
                             headers={"accept": "application/json"}, what="OpenRouter OAuth key exchange")
    body = answer.object()
    if not answer.ok:
        detail = _detail(body)
        suffix = f": {detail}" if detail else ""
        raise OAuthError(f"OpenRouter OAuth key exchange failed (HTTP {answer.status}){suffix}")
    if not isinstance(body.get("key"), str) or not body["key"]:
        raise OAuthError('OpenRouter OAuth response carries no "key"')
    return {"type": "oauth", "access": body["key"], "refresh": "", "expires": NEVER}


class OpenRouterFlow:
    provider = PROVIDER
    name = FLOWS[PROVIDER].name
    subscription = FLOWS[PROVIDER].subscription

    async def login(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        keys = c.pkce()
        path = f"/oauth/callback/{uuid.uuid4()}"
        host = c.callback_host(env)
        claimed: list[str] = []

        async def on_redirect(got: str, query: Mapping[str, str]) -> tuple[int, str, Any]:
            if got != path:
                return 404, c.page("Not found", "OAuth callback route not found."), None
            if claimed:
                return 409, c.page("Already used", "This OAuth callback has already been used."), None
            if query.get("error"):
                description = query.get("error_description") or query["error"]
                raise OAuthError(f"OpenRouter authorization failed: {description}")
            if not query.get("code"):
                return 400, c.page("Login failed", "OpenRouter returned no authorization code."), None
            claimed.append(query["code"])
            return 200, c.page("Signed in", "Signed in to OpenRouter. You may now close this page."), query["code"]

        async with c.CallbackServer(host, 0, on_redirect) as server:
            if server is None:
                raise OAuthError("Could not determine the OpenRouter OAuth callback port")
            callback_url = f"http://{host}:{server.port}{path}"
            url = c.authorize_url(c.endpoint(PROVIDER, "authorize_url", AUTHORIZE_URL, env), [
                ("callback_url", callback_url), ("code_challenge", keys.challenge), ("code_challenge_method", "S256")])
            interaction.notify({"type": "progress", "message": f"Listening for OpenRouter OAuth callback on "
                                                               f"{callback_url}"})
            interaction.notify({"type": "auth_url", "url": url,
                                "instructions": "Complete sign-in in your browser. If the browser is on another "
                                                "machine, paste the final redirect URL here."})
            how, result = await c.code_from_browser_or_paste(server, interaction, {
                "type": "manual_code",
                "message": "Complete sign-in in your browser, or paste the authorization code / redirect URL here:",
                "placeholder": callback_url})
        code = result if how == "callback" else c.parse_authorization_input(str(result))[0]
        if not code:
            raise LoginCancelled("Missing authorization code")
        if how == "manual":
            interaction.notify({"type": "progress", "message": "Exchanging authorization code for an API key..."})
        return await _exchange(code, keys.verifier, env)

    async def refresh(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> Credential:
        return dict(credential)

    def to_auth(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> OAuthAuth:
        return OAuthAuth(api_key=str(credential.get("access") or ""))


FLOW: Final = OpenRouterFlow()
