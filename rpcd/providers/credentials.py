"""Credentials as Pi resolves them (pi-ai ``auth/resolve``, pi-coding-agent ``provider-composer``,
``auth-storage``, ``runtime-credentials``).

For one provider, the first of these that exists decides — later sources are *not* tried
when an earlier one is present but unusable (Pi: "no silent env fallback"):

1. ``--api-key`` (the selected model's provider only; kept in memory, never written);
2. ``<agentDir>/auth.json`` — an ``{"type": "api_key", "key": …}`` entry (the key may be
   ``$VAR`` / ``!command`` / a literal, resolved with the entry's own ``env`` first), or an
   ``{"type": "oauth", "access", "refresh", "expires", …}`` login (Pi's or rpcd's), refreshed
   before a request when it expires within five minutes, and after a 401 (``logins``);
3. models.json ``apiKey`` (``$VAR``, ``${VAR}``, ``!command``, a literal);
4. the provider's environment variables, in Pi's order (``catalog.json`` ``auth.env``:
   ``ANTHROPIC_AUTH_TOKEN`` is sent as ``Authorization: Bearer``, ``ANTHROPIC_OAUTH_TOKEN``
   and ``ANTHROPIC_API_KEY`` as the key, ``OPENAI_API_KEY``, ``GEMINI_API_KEY``, …).

``check`` answers "is this provider usable now?" without running commands (Pi's
``checkAuth``: a ``!command`` key counts as configured, a ``$VAR`` key only when the
variable is set); ``resolve`` produces the key and headers for one request.

No value ever appears in a message, a ``repr`` or an exception: only provider ids, file
names, variable names and kinds.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

import attrs

from rpcd.core.errors import LoginFailedError
from rpcd.core.files import read_regular
from rpcd.core.values import Diagnostic
from rpcd.providers.models_config import (
    ProviderSpec,
    config_value_env_names,
    is_command_value,
    resolve_config_value,
    resolve_headers,
)

if TYPE_CHECKING:
    from rpcd.providers.ambient import Ambient
    from rpcd.providers.oauth import OAuthAuth

AUTH_FILE: Final = "auth.json"
OAUTH_MIN_VALIDITY_MS: Final = 5 * 60 * 1000
OAUTH_BEARER_PROVIDERS: Final = frozenset({"kimi-coding"})
"""Providers whose OAuth access token is sent as ``Authorization: Bearer`` (Pi's ``toAuth``)."""
PI_LOGIN_HINT: Final = "log in again: rpcctl login, or /login in pi"
AMBIENT_PROVIDERS: Final = frozenset({"amazon-bedrock", "google-vertex", "cloudflare-workers-ai",
                                      "cloudflare-ai-gateway"})
"""Providers whose credentials Pi resolves from several variables and files (``ambient``)."""


class CredentialError(Exception):
    """Credentials for a provider exist but cannot be used (message names no value)."""


class LoginError(CredentialError, LoginFailedError):
    """A login, logout or OAuth refresh failed; the message names the provider and the step, never a token."""


@attrs.frozen
class StoredCredential:
    type: str
    key: str | None = attrs.field(default=None, repr=False)
    env: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    access: str | None = attrs.field(default=None, repr=False)
    expires: float | None = None
    available_models: tuple[str, ...] | None = None
    """GitHub Copilot's ``availableModelIds``: the models the login may use (Pi's ``filterModels``)."""


@attrs.frozen
class AuthCheck:
    source: str
    """Where the credential comes from (a label: ``ANTHROPIC_API_KEY``, ``auth.json``, …)."""
    type: str = "api_key"


@attrs.frozen
class ResolvedAuth:
    api_key: str | None = attrs.field(repr=False)
    headers: Mapping[str, str] = attrs.field(repr=False)
    source: str
    env: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """The stored credential's ``env`` (Pi passes it to the API as ``options.env``)."""
    removed_headers: tuple[str, ...] = ()
    """Credential headers of the API the request must not carry (Pi's ``null`` header values)."""

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(v for v in (self.api_key, *self.headers.values()) if v)


AUTH_FILE_LIMIT = 4 << 20
"""auth.json larger than this is refused with a diagnostic (Pi writes a few entries)."""


def load_auth_file(agent_dir: str, *, path: str | None = None) -> tuple[dict[str, StoredCredential], list[Diagnostic]]:
    """``<agentDir>/auth.json`` (or ``path``) in Pi's format; a broken file or entry is a diagnostic."""
    path = path or os.path.join(agent_dir, AUTH_FILE)
    try:
        text = read_regular(path, AUTH_FILE_LIMIT).decode("utf-8-sig")
    except FileNotFoundError:
        return {}, []
    except (OSError, UnicodeDecodeError):
        return {}, [Diagnostic("warning", f"Could not read {path}; its credentials are ignored")]
    try:
        raw = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", "?")
        return {}, [Diagnostic("warning", f"Invalid JSON in {path} (line {line}); its credentials are ignored")]
    if not isinstance(raw, dict):
        return {}, [Diagnostic("warning", f"Invalid {path}: expected an object; its credentials are ignored")]
    credentials: dict[str, StoredCredential] = {}
    diagnostics: list[Diagnostic] = []
    for provider, entry in raw.items():
        credential = _parse_entry(entry)
        if credential is None:
            diagnostics.append(Diagnostic("warning", f'Invalid {path} credential for provider "{provider}"; ignored'))
            continue
        credentials[str(provider)] = credential
    return credentials, diagnostics


def _parse_entry(entry: Any) -> StoredCredential | None:
    if not isinstance(entry, dict):
        return None
    kind = entry.get("type")
    if kind == "api_key":
        key = entry.get("key")
        env = entry.get("env", {})
        if (key is not None and not isinstance(key, str)) or not isinstance(env, dict) or not all(
            isinstance(v, str) for v in env.values()
        ):
            return None
        return StoredCredential(type="api_key", key=key, env={str(k): v for k, v in env.items()})
    if kind == "oauth":
        access, refresh, expires = entry.get("access"), entry.get("refresh"), entry.get("expires")
        if not isinstance(access, str) or not isinstance(refresh, str):
            return None
        if not isinstance(expires, int | float) or isinstance(expires, bool) or expires != expires:
            return None
        available = entry.get("availableModelIds")
        models = tuple(available) if isinstance(available, list) and all(isinstance(x, str) for x in available) \
            else None
        return StoredCredential(type="oauth", access=access, expires=float(expires), available_models=models)
    return StoredCredential(type=str(kind))


_LIVE: dict[str, tuple[object, dict[str, StoredCredential]]] = {}


class _Look:
    """What one ``one_look`` block saw: auth.json revisions by path, the process environment."""

    __slots__ = ("environ", "revisions")

    def __init__(self) -> None:
        self.revisions: dict[str, object] = {}
        self.environ: dict[str, str] | None = None


_ONE_LOOK: ContextVar[_Look | None] = ContextVar("rpcd_credentials_one_look", default=None)


@contextlib.contextmanager
def one_look() -> Iterator[None]:
    """Availability decided at one instant: inside the block each auth.json is looked at (``stat``)
    once and the process environment read once, however many providers ask. A session's model
    selection asks each of ~40 providers whether it is usable, and each asked for auth.json's
    revision up to four times (~170 ``stat`` calls per session made); the answers are the ones an
    instantaneous selection would give. For synchronous checks only: nothing inside writes
    auth.json (a login or a refresh outside the block is seen by the next look)."""
    token = _ONE_LOOK.set(_Look())
    try:
        yield
    finally:
        _ONE_LOOK.reset(token)


def _revision(path: str) -> object:
    """auth.json's revision (``authfile.revision``), the block's one look inside ``one_look``."""
    from rpcd.providers.authfile import revision

    look = _ONE_LOOK.get()
    if look is None:
        return revision(path)
    revisions = look.revisions
    if path not in revisions:
        revisions[path] = revision(path)
    return revisions[path]


def _environ() -> Mapping[str, str]:
    """The process environment: ``os.environ``, or inside ``one_look`` one copy of it."""
    look = _ONE_LOOK.get()
    if look is None:
        return os.environ
    if look.environ is None:
        look.environ = dict(os.environ)
    return look.environ


def _live(path: str, snapshot: Mapping[str, StoredCredential]) -> Mapping[str, StoredCredential]:
    current = _revision(path)
    if current is None:
        return {}
    cached = _LIVE.get(path)
    if cached is not None and cached[0] == current:
        return cached[1]
    stored, diagnostics = load_auth_file(os.path.dirname(path), path=path)
    if diagnostics and not stored:
        return snapshot  # unreadable right now (Pi writing it in place?): keep what we had
    _LIVE[path] = (current, stored)
    return stored


@attrs.frozen
class Credentials:
    """One snapshot of every credential source (built per session creation)."""

    stored: Mapping[str, StoredCredential] = attrs.field(factory=dict, repr=False)
    runtime_keys: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """``--api-key`` values by provider id."""
    env: Mapping[str, str] | None = attrs.field(default=None, repr=False)
    """``None``: the process environment, read at use."""
    now: Any = attrs.field(default=None, repr=False, eq=False)
    """Clock in ms (tests); ``None``: ``time.time()``."""
    auth_path: str | None = None
    """The auth.json the stored entries came from: OAuth logins are refreshed there (``logins``).
    ``None``: a snapshot only (an OAuth token is used while it is valid)."""

    def _env(self) -> Mapping[str, str]:
        return _environ() if self.env is None else self.env

    def _now_ms(self) -> float:
        return float(self.now()) if self.now is not None else time.time() * 1000

    def credential(self, provider: str) -> StoredCredential | None:
        key = self.runtime_keys.get(provider)
        if key:
            return StoredCredential(type="api_key", key=key)
        return self.entries().get(provider)

    def entries(self) -> Mapping[str, StoredCredential]:
        """The stored credentials as auth.json holds them now: re-read when the file changed (a login,
        a logout or a refresh by rpcd or Pi), like Pi's ``readLatestData``; the snapshot otherwise."""
        if self.auth_path is None:
            return self.stored
        return _live(self.auth_path, self.stored)

    @property
    def revision(self) -> object:
        """Changes whenever ``entries`` may have (what availability checks are cached against)."""
        if self.auth_path is None:
            return None
        return _revision(self.auth_path)

    def source_kind(self, provider: str) -> str:
        if provider in self.runtime_keys:
            return "--api-key"
        return AUTH_FILE

    # -- availability --------------------------------------------------------------------

    def check(self, spec: ProviderSpec) -> AuthCheck | None:
        """Pi's ``checkAuth``: usable now? (no command runs, no value leaves)."""
        builtin = spec.builtin
        auth = builtin.auth if builtin is not None else None
        credential = self.credential(spec.name)
        if credential is not None:
            if credential.type == "oauth":
                if not self._oauth_supported(spec):
                    return None
                if self.auth_path is None and self._oauth_expiring(credential):
                    return None  # nothing can refresh it
                return AuthCheck(source="OAuth", type="oauth")
            if credential.type != "api_key":
                return None
            if auth is not None and not auth.api_key:
                return None
            if credential.key:
                if auth is not None and not auth.stored:  # a key Pi reads with more (Cloudflare's account id)
                    return self._env_check(spec, credential) if spec.name in AMBIENT_PROVIDERS else None
                return AuthCheck(source=self.source_kind(spec.name))
            return self._env_check(spec, credential)  # an entry without a key: Pi resolves from the environment
        if auth is not None and not auth.api_key and spec.api_key is None:
            return None
        if spec.api_key is not None:
            if is_command_value(spec.api_key):
                return AuthCheck(source="models.json apiKey (command)")
            env = self._env()
            if all(env.get(name) for name in config_value_env_names(spec.api_key)):
                return AuthCheck(source="models.json apiKey")
            return None
        return self._env_check(spec)

    def _ambient(self, spec: ProviderSpec, credential: StoredCredential | None) -> Ambient | None:
        """The AWS chain / Vertex ADC resolution (``ambient``) of a provider that has one."""
        from rpcd.providers.ambient import RESOLVERS

        resolver = RESOLVERS.get(spec.name)
        if resolver is None:
            return None
        env = self._env()
        stored_env = credential.env if credential is not None else None
        return resolver(credential.key if credential is not None else None, stored_env,
                        lambda name: env.get(name) or None)

    def _env_check(self, spec: ProviderSpec, credential: StoredCredential | None = None) -> AuthCheck | None:
        auth = spec.builtin.auth if spec.builtin is not None else None
        if auth is None:
            return None
        if auth.custom and spec.name in AMBIENT_PROVIDERS:
            ambient = self._ambient(spec, credential)
            return AuthCheck(source=ambient.source) if ambient is not None else None
        env = self._env()
        for name, _kind in auth.env:
            if env.get(name):
                return AuthCheck(source=name)
        return None

    @staticmethod
    def _oauth_supported(spec: ProviderSpec) -> bool:
        from rpcd.providers.oauth import FLOW_MODULES

        auth = spec.builtin.auth if spec.builtin is not None else None
        return spec.name in FLOW_MODULES and auth is not None and auth.oauth

    def _oauth_expiring(self, credential: StoredCredential) -> bool:
        return credential.expires is None or self._now_ms() + OAUTH_MIN_VALIDITY_MS >= credential.expires

    def why_unusable(self, spec: ProviderSpec) -> str:
        """A one-line reason ``check`` said no (names sources, never values)."""
        credential = self.credential(spec.name)
        auth = spec.builtin.auth if spec.builtin is not None else None
        if credential is not None and credential.type == "oauth":
            if not self._oauth_supported(spec):
                return f'the OAuth login stored in {AUTH_FILE} for "{spec.name}" is not supported by rpcd'
            return f'the OAuth access token in {AUTH_FILE} for "{spec.name}" has expired ({PI_LOGIN_HINT})'
        if spec.api_key is not None:
            missing = [n for n in config_value_env_names(spec.api_key) if not self._env().get(n)]
            if missing:
                return f'its models.json apiKey needs {", ".join(missing)}, which is not set'
        if spec.name in AMBIENT_PROVIDERS and auth is not None and auth.custom:
            from rpcd.providers.ambient import HINTS

            return HINTS[spec.name]
        if auth is not None and auth.env:
            return f"no API key (set {' or '.join(auth.env_names)}, add it to {AUTH_FILE}, or pass --api-key)"
        return f"no API key (set apiKey in models.json, add it to {AUTH_FILE}, or pass --api-key)"

    # -- per request -------------------------------------------------------------------------

    def resolve(self, spec: ProviderSpec, oauth: OAuthAuth | None = None) -> ResolvedAuth:
        """The key and headers of one request; ``CredentialError`` / ``UnresolvedValueError``
        when a configured source cannot be used (runs ``!command`` values: not on the loop).
        ``oauth``: how the (freshly refreshed) stored login is used, from ``logins``."""
        credential = self.credential(spec.name)
        env = self._env()
        api_key: str | None = None
        headers: dict[str, str] = {}
        scoped_env: Mapping[str, str] = {}
        removed: tuple[str, ...] = ()
        source: str
        auth = spec.builtin.auth if spec.builtin is not None else None
        # a stored key Pi reads together with more values (Cloudflare's account id): the resolver's
        ambient_key = bool(credential is not None and credential.type == "api_key" and credential.key
                           and auth is not None and not auth.stored and spec.name in AMBIENT_PROVIDERS)
        if credential is not None and credential.type == "oauth" and oauth is not None:
            api_key = oauth.api_key or None
            headers.update(oauth.headers)
            source = "OAuth"
        elif credential is not None and credential.type == "oauth":
            if not self._oauth_supported(spec):
                raise CredentialError(f'The OAuth login stored in {AUTH_FILE} for "{spec.name}" is not supported '
                                      "by rpcd; use an API key")
            if self._oauth_expiring(credential):
                raise CredentialError(f'The OAuth access token in {AUTH_FILE} for "{spec.name}" has expired or '
                                      f"expires within five minutes; {PI_LOGIN_HINT}")
            if spec.name in OAUTH_BEARER_PROVIDERS:
                headers["Authorization"] = f"Bearer {credential.access}"
            else:
                api_key = credential.access
            source = "OAuth"
        elif credential is not None and credential.type == "api_key" and credential.key and not ambient_key:
            merged_env = {**env, **credential.env}
            api_key = resolve_config_value(credential.key, env=merged_env,
                                           what=f'the {self.source_kind(spec.name)} key for "{spec.name}"')
            source = self.source_kind(spec.name)
            scoped_env = credential.env
        elif credential is not None and credential.type not in ("api_key",):
            raise CredentialError(f'{AUTH_FILE} holds a "{credential.type}" credential for "{spec.name}", '
                                  "which rpcd cannot use")
        elif spec.api_key is not None and not ambient_key:
            api_key = resolve_config_value(spec.api_key, env=env, what=f'apiKey of provider "{spec.name}"')
            source = "models.json apiKey"
        elif auth is not None and auth.custom and spec.name in AMBIENT_PROVIDERS:
            ambient = self._ambient(spec, credential)
            if ambient is None:
                raise CredentialError(f'No credentials for provider "{spec.name}"')
            api_key, source, scoped_env = ambient.api_key, ambient.source, ambient.env
            headers.update(ambient.headers)
            removed = ambient.removed_headers
        else:
            found = None
            for name, kind in auth.env if auth is not None else ():
                value = env.get(name)
                if value:
                    found = (name, kind, value)
                    break
            if found is None:
                raise CredentialError(f'No API key for provider "{spec.name}"')
            name, kind, value = found
            if kind == "bearer":
                headers["Authorization"] = f"Bearer {value}"
            else:
                api_key = value
            source = name
        headers.update(resolve_headers(spec.headers, env=env, what=f'header of provider "{spec.name}":'))
        if spec.auth_header:
            if not api_key:
                raise CredentialError(f'Provider "{spec.name}": authHeader requires a resolved API key')
            headers["Authorization"] = f"Bearer {api_key}"
        return ResolvedAuth(api_key=api_key, headers=headers, source=source, env=scoped_env, removed_headers=removed)


def env_names(spec: ProviderSpec) -> tuple[str, ...]:
    builtin = spec.builtin
    return builtin.auth.env_names if builtin is not None else ()
