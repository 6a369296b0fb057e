"""Wire handlers of the logins: ``listAuthProviders``, ``login``, ``logout`` (process-wide: they act on
``<agentDir>/auth.json``, shared with Pi, not on the current session, so they neither queue behind a
replacement nor need a usable session — a person can log in when no model could be chosen).

The logins are the session service's (``ProcessServices.logins``: the providers room's flows); the
person's part goes to the client as ``auth/prompt`` requests and ``auth/notify`` notifications tagged
with one ``loginId``. A cancelled ``login`` request stops the flow (its loopback server closes, a pending
prompt is withdrawn with ``$/cancelRequest``); nothing is stored unless the flow completed. The next
model request of every session sees the new credential (auth.json is re-read when it changes).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import anyio

from rpcd.core.errors import LoginCancelledError, LoginFailedError
from rpcd.protocol import types as t
from rpcd.sessions.services import ProcessServices
from rpcd.wire.client_requests import ClientRequests

_ids = itertools.count(1)


class _WireInteraction:
    """A flow's ``Interaction`` over the client: ``prompt`` → ``auth/prompt``, ``notify`` → ``auth/notify``."""

    def __init__(self, requests: ClientRequests, login_id: str, provider: str) -> None:
        self._requests = requests
        self._login_id = login_id
        self._provider = provider

    async def prompt(self, prompt: Mapping[str, Any]) -> str:
        spec: dict[str, Any] = {"type": prompt.get("type"), "message": prompt.get("message", "")}
        if prompt.get("options"):
            spec["options"] = [{"id": o.get("id"), "label": o.get("label")} for o in prompt["options"]]
        if prompt.get("placeholder"):
            spec["placeholder"] = prompt["placeholder"]
        answer = await self._requests.auth_prompt({"loginId": self._login_id, "provider": self._provider,
                                                   "prompt": spec})
        if answer is None:
            raise LoginCancelledError("declined")
        return answer

    def notify(self, notice: Mapping[str, Any]) -> None:
        self._requests.auth_notify({"loginId": self._login_id, "provider": self._provider, "notice": dict(notice)})


class LoginMethods:
    def __init__(self, services: ProcessServices, requests: ClientRequests) -> None:
        self._services = services
        self._requests = requests

    async def list_auth_providers(self, params: t.EmptyParams | None = None) -> t.ListAuthProvidersResult:
        providers = await anyio.to_thread.run_sync(self._services.logins().providers)
        return t.ListAuthProvidersResult(providers=[
            t.AuthProviderInfo(id=p.id, name=p.name, oauth=p.oauth, api_key=p.api_key, subscription=p.subscription,
                               stored=p.stored, expires=p.expires) for p in providers])

    async def login(self, params: t.LoginParams) -> t.LoginResult:
        logins = self._services.logins()
        known = {p.id: p for p in logins.providers()}
        info = known.get(params.provider)
        oauth = params.method == "oauth"
        if info is None or not (info.oauth if oauth else info.api_key):
            how = "OAuth login" if oauth else "stored API key"
            choices = ", ".join(p for p, i in known.items() if (i.oauth if oauth else i.api_key))
            raise LoginFailedError(f'"{params.provider}" has no {how} (those that do: {choices})')
        if not self._requests.can_prompt_auth:
            raise LoginFailedError("login needs a client that answers auth/prompt (declare capabilities.authPrompt "
                                   "in initialize)")
        interaction = _WireInteraction(self._requests, f"login-{next(_ids)}", params.provider)
        try:
            stored = await logins.login(params.provider, interaction, params.method)
        except LoginCancelledError as exc:
            raise LoginCancelledError(f"Login to {params.provider} cancelled ({exc})") from None
        except LoginFailedError as exc:
            raise LoginFailedError(f"Login to {params.provider} failed: {exc}") from None
        expires = stored.get("expires") if stored.get("type") == "oauth" else None
        return t.LoginResult(provider=params.provider, type=stored["type"],
                             expires=int(expires) if isinstance(expires, int | float) else None)

    async def logout(self, params: t.LogoutParams) -> t.LogoutResult:
        try:
            removed = await self._services.logins().logout(params.provider)
        except LoginFailedError as exc:
            raise LoginFailedError(f"Logout from {params.provider} failed: {exc}") from None
        return t.LogoutResult(provider=params.provider, removed=removed)
