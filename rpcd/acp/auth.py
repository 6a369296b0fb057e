"""What ``initialize`` says about models and keys, from the providers a session would see.

``authMethods``: one per provider (in Pi's order of preference) whose models rpcd can talk to, that
takes its key from the environment, and that has no usable credential now — named after the
variables it reads, so an editor can tell the user what to set (offered as ACP's ``env_var`` methods
by ``rpcd.acp.agent``; ``authenticate`` re-reads ``auth.json`` and the environment and answers
``-32000`` naming the variables while nothing usable is there). Providers and keys are re-read on
every call (Pi reloads ``models.json`` and ``auth.json`` too); nothing secret leaves.

``images``: whether some model usable now takes image input.

``logins``: one ``terminal`` auth method per provider with a subscription login (Pi's ``/login``:
Anthropic, OpenAI Codex, GitHub Copilot, xAI, OpenRouter, Kimi Code, Radius), offered to a client that
declared ``auth.terminal``: it runs the agent's command with ``--login <provider>`` in a terminal
(``rpcd.daemon.login``, the same flows as the JSON-RPC ``login``), then ``authenticate`` finds the login
stored in ``auth.json``.
"""

from __future__ import annotations

import attrs

from rpcd.providers.catalog import builtin_catalog
from rpcd.providers.credentials import AUTH_FILE, env_names
from rpcd.providers.faux import FAUX_MODEL
from rpcd.providers.remote import SUPPORTED_APIS, RemoteProvider, build_providers


@attrs.frozen
class ProviderAuth:
    id: str
    name: str
    env: tuple[str, ...]
    usable: bool
    why: str
    """Why it is not usable (names variables and files, never values)."""

    @property
    def description(self) -> str:
        names = " or ".join(self.env)
        return (f"Set {names} in the environment rpcd is started with, or store a key for \"{self.id}\" in "
                f"<agentDir>/{AUTH_FILE} (Pi's /login), then authenticate again.")


@attrs.frozen
class ProviderLogin:
    id: str
    """``login:<provider>`` (the auth method's id)."""
    provider: str
    name: str
    stored: bool
    """An OAuth login for it is in auth.json now."""

    @property
    def args(self) -> list[str]:
        return ["--login", self.provider]

    @property
    def description(self) -> str:
        return (f"Log in to {self.name} in a terminal (rpcd login {self.provider}); the login is stored in "
                f"<agentDir>/{AUTH_FILE}, shared with Pi.")


LOGIN_PREFIX = "login:"


@attrs.frozen
class ProviderSummary:
    auth: tuple[ProviderAuth, ...]
    images: bool
    logins: tuple[ProviderLogin, ...] = ()


def _implemented(provider: RemoteProvider) -> bool:
    return any(model.api in SUPPORTED_APIS for model in provider.spec.models)


def summarize(agent_dir: str) -> ProviderSummary:
    """Blocking (reads ``models.json`` / ``auth.json``): call it in a worker thread."""
    providers, _diagnostics = build_providers(agent_dir)
    by_name = {provider.name: provider for provider in providers}
    order = [name for name, _ in builtin_catalog().default_model_per_provider]
    ordered = [by_name[name] for name in order if name in by_name]
    ordered += [p for p in providers if p.name not in order]
    auths: list[ProviderAuth] = []
    images = "image" in FAUX_MODEL.input
    for provider in ordered:
        usable = provider.usable_models()
        images = images or any("image" in model.input for model in usable)
        names = env_names(provider.spec)
        if not names or not _implemented(provider):
            continue
        auths.append(ProviderAuth(
            id=provider.name, name=provider.spec.display_name or provider.name, env=names, usable=bool(usable),
            why="" if usable else provider.credentials.why_unusable(provider.spec),
        ))
    return ProviderSummary(tuple(auths), images, _logins(agent_dir))


def _logins(agent_dir: str) -> tuple[ProviderLogin, ...]:
    import os

    from rpcd.providers.logins import logins_for

    logins = logins_for(os.path.join(agent_dir, AUTH_FILE))
    return tuple(ProviderLogin(id=f"{LOGIN_PREFIX}{p.id}", provider=p.id, name=p.name, stored=p.stored == "oauth")
                 for p in logins.providers() if p.oauth)
