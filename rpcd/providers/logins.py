"""Logins and logouts, and OAuth tokens kept fresh, for one ``auth.json`` (shared with Pi).

* ``providers()`` — what can be logged in to and how (``listAuthProviders``): every provider with an
  OAuth flow (Pi 0.85.0's: Anthropic, OpenAI Codex, GitHub Copilot, xAI, OpenRouter, Kimi Code,
  Radius) and every provider that takes a stored API key, with what is stored now (never a value).
* ``login(provider, interaction)`` — runs the provider's flow (``oauth``) or asks for a key
  (``api_key``), and stores the result under Pi's lock exactly as Pi stores it.
* ``logout(provider)`` — removes the provider's entry.
* ``fresh(provider)`` — pi-ai's ``resolveStoredOAuth``: the stored OAuth credential, refreshed first
  when it expires within five minutes — under the lock, after re-reading the file, so when Pi (or
  another rpcd) refreshed meanwhile its tokens are used and nobody's refresh token is spent twice.
  ``fresh(provider, rejected=<access token>)`` is the same after the server refused that token (a
  401): refreshed unless someone already replaced it. A failed refresh changes nothing on disk (a
  revoked refresh token leaves the entry for the person to log in again) and says so.

One ``Logins`` per auth.json per process (``logins_for``); refreshes of one provider are also
serialized inside the process, so two sessions needing a fresh token make one request.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, Final, Literal

import anyio
import attrs

from rpcd.providers.authfile import AuthFile, AuthFileError, Entry
from rpcd.providers.credentials import LoginError
from rpcd.providers.oauth import FLOW_MODULES, FLOWS, Credential, Interaction, LoginCancelled, OAuthAuth, OAuthError
from rpcd.providers.oauth import flow as oauth_flow

MIN_VALIDITY_MS: Final = 5 * 60 * 1000
REFRESH_TIMEOUT_S: Final = 15.0
"""Pi's ``DEFAULT_OAUTH_REFRESH_TIMEOUT_MS``."""


@attrs.frozen
class AuthProvider:
    """One entry of ``listAuthProviders``."""

    id: str
    name: str
    oauth: bool
    api_key: bool
    subscription: bool = False
    stored: Literal["oauth", "api_key"] | None = None
    """What auth.json holds for it now: ``oauth``, ``api_key`` or ``None``."""
    expires: int | None = None
    """The stored OAuth access token's expiry (ms since the epoch), when there is one."""


def expiring(credential: Mapping[str, Any], *, now_ms: float | None = None,
             min_validity_ms: int = MIN_VALIDITY_MS) -> bool:
    expires = credential.get("expires")
    if not isinstance(expires, int | float) or isinstance(expires, bool):
        return True
    now = time.time() * 1000 if now_ms is None else now_ms
    return now + min_validity_ms >= expires


class Logins:
    def __init__(self, auth_path: str, env: Mapping[str, str] | None = None) -> None:
        self.file = AuthFile(auth_path)
        self._env = env
        self._locks: dict[str, anyio.Lock] = {}

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    def _lock(self, provider: str) -> anyio.Lock:
        lock = self._locks.get(provider)
        if lock is None:
            lock = self._locks[provider] = anyio.Lock()
        return lock

    # -- listing ---------------------------------------------------------------------------

    def providers(self) -> list[AuthProvider]:
        from rpcd.providers.ambient import KEY_LOGIN_VALUES
        from rpcd.providers.catalog import builtin_catalog

        try:
            stored = self.file.read()
        except AuthFileError:
            stored = {}
        out: list[AuthProvider] = []
        for provider in builtin_catalog().providers.values():
            auth = provider.auth
            oauth = provider.id in FLOW_MODULES
            api_key = bool(auth.api_key and (auth.stored or provider.id in KEY_LOGIN_VALUES))
            if not oauth and not api_key:
                continue
            entry = stored.get(provider.id)
            kind: Literal["oauth", "api_key"] | None = None
            if isinstance(entry, dict) and entry.get("type") in ("oauth", "api_key"):
                kind = "oauth" if entry["type"] == "oauth" else "api_key"
            expires = entry.get("expires") if kind == "oauth" and isinstance(entry, dict) else None
            flow = FLOWS.get(provider.id)
            out.append(AuthProvider(
                id=provider.id, name=flow.name if flow is not None else provider.name, oauth=oauth, api_key=api_key,
                subscription=flow.subscription if flow is not None else False, stored=kind,
                expires=int(expires) if isinstance(expires, int | float) and not isinstance(expires, bool) else None))
        return out

    # -- login / logout --------------------------------------------------------------------

    async def login(self, provider: str, interaction: Interaction, method: str = "oauth") -> Entry:
        """Run the login and store its credential; answers what was stored."""
        credential: Credential
        flow = None
        if method == "oauth":
            flow = oauth_flow(provider)
            if flow is None:
                raise LoginError(f"{provider} has no OAuth login (use method api_key)")
            try:
                credential = await flow.login(interaction, self.env)
            except LoginCancelled:
                raise
            except OAuthError as exc:
                raise OAuthError(_redacted(str(exc))) from None
            except AuthFileError as exc:
                raise LoginError(str(exc)) from None
        elif method == "api_key":
            from rpcd.providers.ambient import KEY_LOGIN_MESSAGES, KEY_LOGIN_VALUES

            message = KEY_LOGIN_MESSAGES.get(provider, f"Enter the API key for {provider}")
            key = await interaction.prompt({"type": "secret", "message": message})
            if not key.strip():
                raise LoginCancelled("No key entered")
            credential = {"type": "api_key", "key": key.strip()}
            values = {name: (await interaction.prompt({"type": "text", "message": text})).strip()
                      for name, text in KEY_LOGIN_VALUES.get(provider, ())}
            if values:
                credential["env"] = values
        else:
            raise LoginError(f"Unknown login method {method!r} (oauth or api_key)")

        async def store(_current: Entry | None) -> Entry:
            return credential

        try:
            stored = await self.file.modify(provider, store)
        except AuthFileError as exc:
            raise LoginError(f"Logged in to {provider}, but the credential could not be stored: {exc}") from None
        assert stored is not None
        list_models = getattr(flow, "models", None)
        if list_models is not None:
            await self._store_models(provider, list_models, stored, interaction)
        return stored

    async def _store_models(self, provider: str, list_models: Any, credential: Entry,
                            interaction: Interaction) -> None:
        """A login whose models come from the provider (Radius): listed now and kept in Pi's
        ``models-store.json`` beside auth.json, as Pi's model refresh after a login keeps them."""
        from rpcd.providers.models_store import store_models

        try:
            models = await list_models(credential, self.env)
            await store_models(os.path.dirname(self.file.path), provider, models)
        except (OAuthError, AuthFileError) as exc:
            interaction.notify({"type": "info", "message": f"Logged in to {provider}, but its models could not be "
                                                           f"listed: {_redacted(str(exc), credential)}"})

    async def logout(self, provider: str) -> bool:
        try:
            return await self.file.delete(provider)
        except AuthFileError as exc:
            raise LoginError(str(exc)) from None

    # -- fresh tokens ----------------------------------------------------------------------

    async def fresh(self, provider: str, *, rejected: str | None = None) -> Entry | None:
        """The provider's OAuth credential, refreshed when it expires soon (or when ``rejected`` is
        still its access token); ``None`` when no OAuth login is stored (logged out meanwhile)."""
        flow = oauth_flow(provider)
        try:
            current = self.file.entry(provider)
        except AuthFileError as exc:
            raise LoginError(str(exc)) from None
        if current is None or current.get("type") != "oauth":
            return None
        if flow is None:
            return current

        def needs(entry: Entry) -> bool:
            if rejected is not None:
                return entry.get("access") == rejected
            return expiring(entry)

        if not needs(current):
            return current
        async with self._lock(provider):

            async def refresh(latest: Entry | None) -> Entry | None:
                if latest is None or latest.get("type") != "oauth":
                    return None  # logged out meanwhile
                if not needs(latest):
                    return None  # Pi or another rpcd refreshed meanwhile: use theirs
                try:
                    with anyio.fail_after(REFRESH_TIMEOUT_S):
                        return await flow.refresh(latest, self.env)
                except TimeoutError:
                    raise OAuthError(f"no answer within {REFRESH_TIMEOUT_S:g} s") from None

            try:
                post = await self.file.modify(provider, refresh)
            except OAuthError as exc:
                # an endpoint may echo what it was sent (the refresh token) in its error description
                text = _redacted(str(exc), current, self.file.entry(provider))
                raise LoginError(f"OAuth refresh failed for {provider}: {text}. Log in again "
                                 f"(rpcctl login {provider}, or /login in pi)") from None
            except AuthFileError as exc:
                raise LoginError(f"OAuth refresh for {provider}: {exc}") from None
        if post is None or post.get("type") != "oauth":
            return None
        return post

    def to_auth(self, provider: str, credential: Mapping[str, Any]) -> OAuthAuth:
        flow = oauth_flow(provider)
        if flow is None:
            return OAuthAuth(api_key=str(credential.get("access") or ""))
        return flow.to_auth(credential, self.env)


def _redacted(text: str, *entries: Mapping[str, Any] | None) -> str:
    """``text`` with every token of ``entries`` (and the usual secret shapes) masked."""
    from rpcd.core.redact import Redactor

    values = tuple(str(e[k]) for e in entries if e for k in ("access", "refresh", "key") if e.get(k))
    return Redactor(extra_secrets=values).redact(text)


_LOGINS: dict[str, Logins] = {}


def logins_for(auth_path: str, env: Mapping[str, str] | None = None) -> Logins:
    """The process's ``Logins`` for ``auth_path`` (one per file, so in-process refreshes are serialized)."""
    key = os.path.abspath(auth_path)
    found = _LOGINS.get(key)
    if found is None or (env is not None and found._env is not env):
        found = _LOGINS[key] = Logins(key, env)
    return found
