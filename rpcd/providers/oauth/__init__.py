"""Subscription logins as Pi's ``pi-ai`` does them (``auth/oauth/*``): one module per provider, all
behind the ``OAuthFlow`` interface, loaded on first use.

A flow drives the person's part through an ``Interaction``: ``notify`` shows something (Pi's notice
objects: ``{"type": "auth_url", "url", "instructions"}``, ``{"type": "device_code", "userCode",
"verificationUri", "intervalSeconds", "expiresInSeconds"}``, ``{"type": "progress", "message"}``,
``{"type": "info", "message", "links"}``) and ``prompt`` asks (``{"type": "select", "message",
"options": [{"id", "label"}]}``, ``"text"`` / ``"secret"`` / ``"manual_code"`` with a ``placeholder``);
a prompt the person declines raises ``LoginCancelled``. The credential a login returns is stored in
auth.json exactly as Pi stores it; ``refresh`` turns one into the next; ``to_auth`` says how a
request uses it.

Every endpoint can be pointed elsewhere (a loopback server in tests, a corporate proxy):
``RPCD_OAUTH_<PROVIDER>_<ENDPOINT>`` (``common.endpoint``; the names are in docs/providers.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Final, Protocol

import attrs

from rpcd.core.errors import LoginCancelledError, LoginFailedError

Notice = Mapping[str, Any]
Prompt = Mapping[str, Any]
Credential = dict[str, Any]


LoginCancelled = LoginCancelledError
"""The person cancelled (declined a prompt, closed the dialog) or the login was aborted (core's type:
a front's prompt raises it too)."""


class OAuthError(LoginFailedError):
    """A login or refresh failed; the message names the step and the status, never a token."""


class Interaction(Protocol):
    async def prompt(self, prompt: Prompt) -> str:
        """Ask and wait for the answer (``LoginCancelled`` when declined); cancelling the caller withdraws it."""
        ...

    def notify(self, notice: Notice) -> None:
        """Show something to the person (never waits)."""
        ...


@attrs.frozen
class OAuthAuth:
    """How a request uses a stored login (pi-ai ``toAuth``)."""

    api_key: str | None = attrs.field(default=None, repr=False)
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    base_url: str | None = None
    """Replaces the model's base URL (GitHub Copilot's per-account endpoint)."""


class OAuthFlow(Protocol):
    provider: str
    name: str
    subscription: bool

    async def login(self, interaction: Interaction, env: Mapping[str, str]) -> Credential: ...

    async def refresh(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> Credential: ...

    def to_auth(self, credential: Mapping[str, Any], env: Mapping[str, str]) -> OAuthAuth: ...


@attrs.frozen
class FlowInfo:
    module: str
    name: str
    subscription: bool


FLOWS: Final = {
    "anthropic": FlowInfo("anthropic", "Anthropic (Claude Pro/Max)", True),
    "openai-codex": FlowInfo("openai_codex", "OpenAI (ChatGPT Plus/Pro)", True),
    "github-copilot": FlowInfo("github_copilot", "GitHub Copilot", True),
    "xai": FlowInfo("xai", "xAI (Grok/X subscription)", True),
    "openrouter": FlowInfo("openrouter", "OpenRouter OAuth", False),
    "kimi-coding": FlowInfo("kimi", "Kimi Code (subscription)", True),
    "radius": FlowInfo("radius", "Radius", False),
}
"""Every provider Pi 0.85.0 can log in to with OAuth: its flow's module, name (Pi's), and whether it
is a subscription (listing them imports no flow)."""
FLOW_MODULES: Final = frozenset(FLOWS)


def flow(provider: str) -> OAuthFlow | None:
    info = FLOWS.get(provider)
    if info is None:
        return None
    loaded: OAuthFlow = importlib.import_module(f"{__name__}.{info.module}").FLOW
    return loaded
