"""Radius (Pi's gateway), pi-ai ``auth/oauth/radius.ts``: a choice of a browser login (PKCE against
the authorization endpoint the gateway's ``/v1/oauth`` names, loopback redirect on
``127.0.0.1:1456/oauth/callback``) or an RFC 8628 device code; tokens from the gateway's
``/v1/oauth/token``. The gateway is ``https://radius.pi.dev`` unless ``RPCD_OAUTH_RADIUS_GATEWAY_URL``
names another.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any, Final

from rpcd.providers.oauth import FLOWS, Credential, Interaction, LoginCancelled, OAuthAuth, OAuthError
from rpcd.providers.oauth import common as c

PROVIDER: Final = "radius"
GATEWAY: Final = "https://radius.pi.dev"
CALLBACK_HOST: Final = "127.0.0.1"
CALLBACK_PORT: Final = 1456
CALLBACK_PATH: Final = "/oauth/callback"
CLIENT_ID: Final = "pi-gateway"
SCOPE: Final = "gateway offline_access"
EXPIRY_SKEW_MS: Final = 60_000
BROWSER: Final = "browser"
DEVICE_CODE: Final = "device-code"
DEVICE_GRANT: Final = "urn:ietf:params:oauth:grant-type:device_code"


def gateway(env: Mapping[str, str]) -> str:
    """pi-ai ``normalizeRadiusGatewayUrl``."""
    value = c.endpoint(PROVIDER, "gateway_url", GATEWAY, env)
    with_scheme = value if re.match(r"^https?://", value, re.IGNORECASE) else f"https://{value}"
    return with_scheme.rstrip("/")


class ResponseError(OAuthError):
    def __init__(self, answer: c.Answer, message: str) -> None:
        body = answer.object()
        self.oauth_error = body.get("error") if isinstance(body.get("error"), str) else None
        description = body.get("error_description") if isinstance(body.get("error_description"), str) else None
        if answer.json() is None and answer.text:
            description = answer.text[:200]
        detail = (f"{self.oauth_error}: {description}" if description else self.oauth_error) if self.oauth_error \
            else (description or str(answer.status))
        super().__init__(f"{message}: {detail}")


async def _token(env: Mapping[str, str], form: Mapping[str, str]) -> Credential:
    answer = await c.request("POST", f"{gateway(env)}/v1/oauth/token", form=form,
                             headers={"accept": "application/json"}, what="Radius OAuth request")
    if not answer.ok:
        raise ResponseError(answer, "Radius OAuth request failed")
    data = answer.object()
    if not isinstance(data.get("access_token"), str) or not isinstance(data.get("expires_in"), int | float):
        raise OAuthError("Radius OAuth response is missing required fields")
    credential: Credential = {"type": "oauth", "access": data["access_token"], "refresh": data.get("refresh_token"),
                              "expires": c.now_ms() + int(data["expires_in"] * 1000) - EXPIRY_SKEW_MS}
    if data.get("scope") is not None:
        credential["scope"] = data["scope"]
    return credential


class RadiusFlow:
    provider = PROVIDER
    name = FLOWS[PROVIDER].name
    subscription = FLOWS[PROVIDER].subscription

    async def login(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        method = await interaction.prompt({"type": "select", "message": f"Sign in to {self.name}:", "options": [
            {"id": BROWSER, "label": "Sign in with browser (recommended)"},
            {"id": DEVICE_CODE, "label": "Sign in with device code (when signing in from another device)"}]})
        if method == DEVICE_CODE:
            return await self._device_code(interaction, env)
        if method == BROWSER:
            return await self._browser(interaction, env)
        raise OAuthError(f"Unknown {self.name} sign-in method: {method}")

    async def _browser(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        base = gateway(env)
        discovery = await c.request("GET", f"{base}/v1/oauth", headers={"accept": "application/json"},
                                    what="Radius OAuth config")
        endpoint = discovery.object().get("authorizationEndpoint") if discovery.ok else None
        if not isinstance(endpoint, str):
            raise OAuthError(f"Could not load Radius OAuth config from {base}: {discovery.status}")
        keys = c.pkce()
        state = str(uuid.uuid4())
        port = c.callback_port(PROVIDER, CALLBACK_PORT, env)

        async def on_redirect(path: str, query: Mapping[str, str]) -> tuple[int, str, Any]:
            if path != CALLBACK_PATH:
                return 404, c.page("Not found", "Callback route not found."), None
            if query.get("state") != state:
                return 400, c.page("Login failed", "OAuth state mismatch."), None
            if query.get("error"):
                return 400, c.page("Login failed", query.get("error_description") or query["error"]), ""
            if not query.get("code"):
                return 400, c.page("Login failed", "Missing authorization code."), None
            return 200, c.page("Signed in", "Signed in to Radius. You may now close this page."), query["code"]

        async with c.CallbackServer(CALLBACK_HOST, port, on_redirect) as server:
            redirect_uri = f"http://{CALLBACK_HOST}:{server.port if server else port}{CALLBACK_PATH}"
            url = c.authorize_url(endpoint, [
                ("response_type", "code"), ("client_id", CLIENT_ID), ("redirect_uri", redirect_uri), ("scope", SCOPE),
                ("code_challenge", keys.challenge), ("code_challenge_method", "S256"), ("handoff", "url"),
                ("state", state)])
            interaction.notify({"type": "progress", "message": f"Listening for OAuth callback on {redirect_uri}"})
            interaction.notify({"type": "auth_url", "url": url, "instructions": "Continue in your browser."})
            code = await server.wait() if server is not None else None
        if not code:
            raise LoginCancelled("OAuth callback did not complete.")
        return await _token(env, c.token_form("authorization_code", client_id=CLIENT_ID, redirect_uri=redirect_uri,
                                              code=code, code_verifier=keys.verifier))

    async def _device_code(self, interaction: Interaction, env: Mapping[str, str]) -> Credential:
        answer = await c.request("POST", f"{gateway(env)}/v1/oauth/device", form={"client_id": CLIENT_ID,
                                                                                  "scope": SCOPE},
                                 headers={"accept": "application/json"}, what="Radius OAuth device authorization")
        if not answer.ok:
            raise ResponseError(answer, "Radius OAuth device authorization failed")
        data = answer.object()
        if not all(data.get(k) for k in ("device_code", "user_code", "verification_uri", "expires_in")):
            raise OAuthError("Radius OAuth device authorization response is missing required fields")
        interaction.notify({"type": "device_code", "userCode": data["user_code"],
                            "verificationUri": data["verification_uri"], "intervalSeconds": data.get("interval"),
                            "expiresInSeconds": data["expires_in"]})

        async def poll() -> c.Poll:
            try:
                return c.Poll("complete", await _token(env, c.token_form(DEVICE_GRANT, client_id=CLIENT_ID,
                                                                          device_code=str(data["device_code"]))))
            except ResponseError as exc:
                if exc.oauth_error == "authorization_pending":
                    return c.Poll("pending")
                if exc.oauth_error == "slow_down":
                    return c.Poll("slow_down")
                if exc.oauth_error == "expired_token":
                    return c.Poll("failed", message="Device authorization expired.")
                if exc.oauth_error == "access_denied":
                    return c.Poll("failed", message="Device authorization was denied.")
                raise

        credential: Credential = await c.poll_device_code(poll, interval=data.get("interval"),
                                                          expires_in=data["expires_in"])
        return credential

    async def refresh(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> Credential:
        return await _token(env, c.token_form("refresh_token", client_id=CLIENT_ID,
                                              refresh_token=str(credential.get("refresh") or "")))

    def to_auth(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> OAuthAuth:
        return OAuthAuth(api_key=str(credential.get("access") or ""))

    async def models(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> list[dict[str, Any]]:
        """The models this login may use (Radius has no built-in ones): the gateway's ``/v1/config``."""
        access = credential.get("access")
        return await gateway_models(access if isinstance(access, str) else None, env)


FLOW: Final = RadiusFlow()


# -- the gateway's models (pi-ai ``providers/radius-config.ts``) ---------------------------------


def _is_gateway_model(value: Any) -> bool:
    """pi-ai ``isRadiusGatewayModel``."""
    return (isinstance(value, dict) and isinstance(value.get("id"), str) and isinstance(value.get("name"), str)
            and isinstance(value.get("reasoning"), bool) and isinstance(value.get("input"), list)
            and isinstance(value.get("cost"), dict) and _is_number(value.get("contextWindow"))
            and _is_number(value.get("maxTokens")))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


async def gateway_models(access: str | None, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """pi-ai ``loadRadiusGatewayConfig`` + ``getRadiusModelsFromConfig``: the models the gateway's
    ``/v1/config`` offers this login, as Radius models (``pi-messages`` at the config's ``baseUrl``)."""
    base = gateway(env)
    headers = {"accept": "application/json"}
    if access:
        headers["authorization"] = f"Bearer {access}"
    answer = await c.request("GET", f"{base}/v1/config", headers=headers, what="Radius config")
    if not answer.ok:
        body = answer.text.strip()
        raise OAuthError(f"Could not load Radius config from {base}: {answer.status}: "
                         f"{body[:512] + '…' if len(body) > 512 else body}")
    config = answer.json()
    if not isinstance(config, dict) or not isinstance(config.get("baseUrl"), str) or not isinstance(
            config.get("models"), list):
        raise OAuthError(f"Invalid Radius config from {base}")
    return [{**model, "api": "pi-messages", "provider": PROVIDER, "baseUrl": config["baseUrl"]}
            for model in config["models"] if _is_gateway_model(model)]
