"""Network providers: one ``RemoteProvider`` per composed provider (catalog + models.json),
streaming each model through the module of its API.

APIs implemented (one module each, the HTTP machinery shared in ``http``):

=========================  =========================================
``openai-completions``     ``rpcd.providers.openai_compat``
``anthropic-messages``     ``rpcd.providers.anthropic``
``openai-responses``       ``rpcd.providers.openai_responses``
``google-generative-ai``   ``rpcd.providers.google``
=========================  =========================================

A model of another API (Bedrock, Vertex, Mistral, Codex, Azure) is listed but not usable:
selecting it is a warning diagnostic / a ``setModel`` error naming the API.

``build_providers`` is what the factory calls for every session it creates: it re-reads
``models.json`` and ``auth.json`` (Pi reloads both), so an edit takes effect at the next
replacement. Nothing here is imported before a session needs a model, and ``httpx`` only
when a request is made or a front warms the model path (``rpcd.providers.warmup``).
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import logging
import os
from collections.abc import AsyncIterator, Mapping, MutableMapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, cast

import anyio
import attrs

from rpcd.core import collection
from rpcd.core.redact import Redactor
from rpcd.core.values import Diagnostic
from rpcd.providers.attribution import attribution_headers, install_telemetry_enabled
from rpcd.providers.base import AssistantMessageEvent, ModelInfo, ProviderRequest, new_assistant_message
from rpcd.providers.catalog import builtin_catalog
from rpcd.providers.credentials import (
    AMBIENT_PROVIDERS,
    AUTH_FILE,
    AuthCheck,
    CredentialError,
    Credentials,
    load_auth_file,
)
from rpcd.providers.http import (
    MAX_ERROR_CHARS,
    HttpRequest,
    ProviderRetry,
    StreamError,
    Timeouts,
    encode_body,
    model_path_ready,
    stream_call,
)
from rpcd.providers.models_config import (
    ModelSpec,
    ProviderSpec,
    UnresolvedValueError,
    builtin_spec,
    compose_providers,
    load_models_config,
    resolve_headers,
)
from rpcd.providers.models_store import RADIUS, with_stored_models

if TYPE_CHECKING:
    import httpx

    from rpcd.providers.call import CallContext
    from rpcd.providers.logins import Logins
    from rpcd.providers.oauth import OAuthAuth

log = logging.getLogger("rpcd.providers")

API_MODULES: Final = {
    "openai-completions": "rpcd.providers.openai_compat",
    "anthropic-messages": "rpcd.providers.anthropic",
    "openai-responses": "rpcd.providers.openai_responses",
    "google-generative-ai": "rpcd.providers.google",
    "mistral-conversations": "rpcd.providers.mistral",
    "azure-openai-responses": "rpcd.providers.azure",
    "openai-codex-responses": "rpcd.providers.codex",
    "pi-messages": "rpcd.providers.pi_messages",
    "google-vertex": "rpcd.providers.vertex",
    "bedrock-converse-stream": "rpcd.providers.bedrock",
}
SUPPORTED_APIS: Final = frozenset(API_MODULES)


def api_module(api: str) -> ModuleType | None:
    name = API_MODULES.get(api)
    return importlib.import_module(name) if name else None


@attrs.frozen
class RequestSettings:
    """Settings-derived request options (re-read per session creation)."""

    timeouts: Timeouts = attrs.field(factory=Timeouts)
    retry: ProviderRetry = attrs.field(factory=ProviderRetry)
    cache_retention: str = "short"
    thinking_budgets: Mapping[str, Any] = attrs.field(factory=dict)
    install_telemetry: bool = False
    """Send pi-coding-agent's provider attribution headers (``attribution``); on by default in
    ``from_settings``, as in Pi."""

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], env: Mapping[str, str] | None = None) -> RequestSettings:
        environ = os.environ if env is None else env
        budgets = settings.get("thinkingBudgets")
        return cls(
            timeouts=Timeouts.from_settings(settings),
            retry=ProviderRetry.from_settings(settings),
            cache_retention="long" if environ.get("PI_CACHE_RETENTION") == "long" else "short",
            thinking_budgets=budgets if isinstance(budgets, Mapping) else {},
            install_telemetry=install_telemetry_enabled(settings, environ),
        )


class RemoteProvider:
    """One composed provider; ``stream`` dispatches on the model's ``api``."""

    def __init__(
        self,
        spec: ProviderSpec,
        *,
        credentials: Credentials | None = None,
        settings: RequestSettings | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.name = spec.name
        self.spec = spec
        self.credentials = credentials or Credentials()
        self.settings = settings or RequestSettings()
        self._transport = transport
        self._table: tuple[dict[str, ModelSpec], list[ModelInfo]] | None = None
        """The models by id and their infos, made on first use (most providers of a start-up have no
        credentials: their models are never asked for)."""
        self._check: AuthCheck | bool | None = False  # False: not checked yet
        self._checked_at: object = None
        """auth.json's revision when ``_check`` was made (a login, logout or refresh changes it)."""

    def __repr__(self) -> str:
        return f"RemoteProvider(name={self.name!r}, models={len(self._models)})"

    @property
    def _models(self) -> dict[str, ModelSpec]:
        return self._tables()[0]

    @property
    def _infos(self) -> list[ModelInfo]:
        return self._tables()[1]

    def _tables(self) -> tuple[dict[str, ModelSpec], list[ModelInfo]]:
        table = self._table
        if table is None:
            table = self._table = (_models(self.spec), _infos(self.spec))
        return table

    def with_spec(self, spec: ProviderSpec) -> RemoteProvider:
        """The same credentials, request settings and transport for another composition of this
        provider (an extension's ``registerProvider`` over it)."""
        return RemoteProvider(spec, credentials=self.credentials, settings=self.settings, transport=self._transport)

    def use_credentials(self, credentials: Credentials) -> None:
        """Switch credential snapshots (``--api-key`` lands here once its provider is known)."""
        self.credentials = credentials
        self._check = False

    def add_custom_model(self, model_id: str, reasoning: bool) -> ModelInfo | None:
        """Pi's ``buildFallbackModel`` for ``--model <provider>/<unknown id>``: the provider's
        default model under the requested id (reasoning forced on when thinking was asked)."""
        if model_id in self._models:
            return self._models[model_id].info()
        if not self._models:
            return None
        default_id = builtin_catalog().default_model_id(self.name)
        base = self._models.get(default_id or "") or next(iter(self._models.values()))
        spec = attrs.evolve(base, id=model_id, name=model_id, reasoning=True if reasoning else base.reasoning)
        self._models[model_id] = spec
        info = spec.info()
        self._infos.append(info)
        return info

    def _follow_store(self) -> None:
        """Radius's models are the ones stored in ``models-store.json`` (``models_store``): follow the
        file, so a login (by rpcd or Pi) shows its models at once, as its credentials show."""
        if self.name != RADIUS or self.spec.configured or self.credentials.auth_path is None:
            return
        agent_dir = os.path.dirname(self.credentials.auth_path)
        builtin = with_stored_models(builtin_catalog(), agent_dir).providers.get(self.name)
        if builtin is not None and builtin is not self.spec.builtin:
            self.spec = builtin_spec(builtin)
            self._table, self._check = None, False

    def models(self) -> list[ModelInfo]:
        self._follow_store()
        return list(self._infos)

    def usable_models(self) -> list[ModelInfo]:
        """The models usable now: none without credentials, else those of an implemented API."""
        self._follow_store()
        check = self.auth_check()
        if check is None:
            return []
        usable = [info for info in self._infos if self._models[info.id].api in SUPPORTED_APIS]
        credential = self.credentials.credential(self.name)
        if check.type == "oauth" and credential is not None and credential.available_models is not None:
            allowed = set(credential.available_models)  # GitHub Copilot: the models the login may use
            usable = [info for info in usable if info.id in allowed]
        return usable

    def model_spec(self, model_id: str) -> ModelSpec | None:
        self._follow_store()
        return self._models.get(model_id)

    def auth_check(self) -> AuthCheck | None:
        revision = self.credentials.revision
        if self._check is False or revision != self._checked_at:
            self._check = self.credentials.check(self.spec)
            self._checked_at = revision
        return self._check if isinstance(self._check, AuthCheck) else None

    @property
    def has_configured_auth(self) -> bool:
        return self.auth_check() is not None

    def unusable_reason(self, model_id: str) -> str | None:
        """Why ``model_id`` cannot be used now (``None``: it can)."""
        spec = self._models.get(model_id)
        if spec is None:
            return "unknown model"
        if spec.api not in SUPPORTED_APIS:
            return f'its api "{spec.api}" is not supported by rpcd'
        if self.auth_check() is None:
            return self.credentials.why_unusable(self.spec)
        return None

    async def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        spec = self._models.get(request.model.id)
        # the process's first call shares the model path's warm-up (``warmup``)
        await model_path_ready(spec.base_url if spec is not None else None)
        message = new_assistant_message(request.model)
        module = api_module(spec.api) if spec is not None else None
        if spec is None or module is None:
            reason = "unknown model" if spec is None else f'api "{spec.api}" is not supported by rpcd'
            yield _fail(message, f"Cannot use {self.name}/{request.model.id}: {reason}")
            return
        message["api"] = spec.api
        login = self._login()
        try:
            oauth = await self._oauth(login) if login is not None else None
            http_request, parser = await self._prepare(module, spec, request, message, oauth)
        except (CredentialError, UnresolvedValueError, StreamError) as exc:  # LoginError is a CredentialError
            yield _fail(message, str(exc))
            return

        async def reauthorize() -> HttpRequest | None:
            """After a 401: refresh the OAuth login unless someone already did, and build the request again."""
            if login is None or oauth is None or (not oauth.api_key and not oauth.headers):
                return None
            rejected = oauth.api_key or next(iter(oauth.headers.values()), "").removeprefix("Bearer ")
            entry = await login.fresh(self.name, rejected=rejected)
            if entry is None:
                return None
            fresh_request, _ = await self._prepare(module, spec, request, message, login.to_auth(self.name, entry))
            return fresh_request

        async with contextlib.aclosing(stream_call(
            provider=self.name,
            request=http_request,
            parser=parser,
            timeouts=self.settings.timeouts,
            retry=self.settings.retry,
            env=self.credentials.env,
            transport=self._transport,
            reauthorize=reauthorize if oauth is not None else None,
            on_response=request.hooks.response if request.hooks is not None else None,
        )) as events:  # closed with this generator (the agent stops reading at ``done``)
            async for event in events:
                yield event

    def _login(self) -> Logins | None:
        """The logins of this provider's auth.json when its credential is a stored OAuth login."""
        credential = self.credentials.credential(self.name)
        if credential is None or credential.type != "oauth" or self.credentials.auth_path is None:
            return None
        from rpcd.providers.logins import logins_for  # the first OAuth request

        return logins_for(self.credentials.auth_path, self.credentials.env)

    async def _oauth(self, login: Logins) -> OAuthAuth:
        entry = await login.fresh(self.name)
        if entry is None:
            raise CredentialError(f'No OAuth login for "{self.name}" in auth.json any more (logged out)')
        return login.to_auth(self.name, entry)

    async def _prepare(self, module: ModuleType, spec: ModelSpec, request: ProviderRequest, message: dict[str, Any],
                       oauth: OAuthAuth | None) -> tuple[HttpRequest, Any]:
        """The request (and the parser of its answer) for ``spec`` with the credentials of now."""
        from rpcd.providers.call import CallContext  # a request's machinery: on the first request

        if self._resolve_may_block(spec):  # a ``!command`` key runs a subprocess: keep it off the event loop
            auth, headers = await anyio.to_thread.run_sync(self._resolve, spec, oauth)
        else:
            auth, headers = self._resolve(spec, oauth)
        if oauth is not None and oauth.base_url:
            spec = attrs.evolve(spec, base_url=oauth.base_url)  # GitHub Copilot's per-account endpoint
        if "{" in spec.base_url and auth.env:
            from rpcd.providers.ambient import CLOUDFLARE_PROVIDERS, cloudflare_base_url

            if self.name in CLOUDFLARE_PROVIDERS:  # Cloudflare's account / gateway ids
                spec = attrs.evolve(spec, base_url=cloudflare_base_url(spec.base_url, auth.env))
        ctx = CallContext(
            system_prompt=request.system_prompt,
            messages=(),  # converted with the request's body (``_built``)
            tools=request.tools,
            thinking_level=request.thinking_level,
            session_id=request.session_id,
            auth=auth,
            headers=headers,
            cache_retention=request.cache_retention or self.settings.cache_retention,
            thinking_budgets=self.settings.thinking_budgets,
            attribution=attribution_headers(spec.provider, spec.base_url, request.session_id,
                                            telemetry=self.settings.install_telemetry),
            max_tokens=request.max_tokens,
            # read-only lookups: the credential's values over the environment, without copying it per call
            env=collections.ChainMap({k: v for k, v in auth.env.items() if v}, cast(
                "MutableMapping[str, str]", os.environ if self.credentials.env is None else self.credentials.env)),
        )
        hooks = request.hooks
        removed: list[str] = list(auth.removed_headers)
        if hooks is not None:
            # Pi's ``transformHeaders`` (before_provider_headers): the option headers, changed in place
            changed = await hooks.headers(dict(ctx.options_headers))
            removed += [name for name, value in changed.items() if value is None]
            ctx = attrs.evolve(ctx, attribution={}, auth=attrs.evolve(ctx.auth, headers={}),
                               headers={name: value for name, value in changed.items() if value is not None})
        try:
            authorize = getattr(module, "authorize", None)
            if authorize is not None:  # credentials that need I/O (ADC tokens, the AWS chain): off the loop
                ctx = await authorize(spec, ctx)
            # A long context's request is tens of thousands of objects, alive until it is encoded. Made
            # with the collector paused, they are freed by reference counting before it runs again:
            # with it on, each turn of a 200,000-entry session moved them to the oldest generation
            # and ran a full collection (~200 ms) over the whole session.
            rewritten = hooks is not None and hooks.changes_payload()
            with collection.paused(kept=False):
                http_request, parser = _built(module, spec, ctx, request.messages, message, encode=not rewritten)
        except StreamError as exc:
            raise StreamError(Redactor(extra_secrets=auth.secrets).redact(str(exc))) from None
        if removed:
            gone = {name.lower() for name in removed}
            http_request = attrs.evolve(http_request, headers={
                name: value for name, value in http_request.headers.items() if name.lower() not in gone})
        if hooks is not None and rewritten:
            # Pi's ``onPayload`` (before_provider_request): the body each handler returns is sent
            body = await hooks.payload(dict(http_request.body))
            if not isinstance(body, Mapping):
                raise StreamError("a before_provider_request handler replaced the payload with something that "
                                  "is not a JSON object")
            http_request = _encoded(attrs.evolve(http_request, body=body))
        return http_request, parser

    def _resolve_may_block(self, spec: ModelSpec) -> bool:
        """Whether resolving a request's key and headers may run a command (a ``!command`` value) or read
        an ambient credential chain (Bedrock's, Vertex's): that runs in a worker thread. Anything else is
        dictionary and environment lookups, done inline: the hand-off to a thread cost more than they do
        (and under load, whole milliseconds before the request could leave)."""
        if self.name in AMBIENT_PROVIDERS:
            return True
        values = [*self.spec.headers.values(), *spec.headers.values()]
        credential = self.credentials.credential(self.name)
        if credential is not None and credential.key:
            values.append(credential.key)
        if self.spec.api_key is not None:
            values.append(self.spec.api_key)
        return any(value.startswith("!") for value in values)

    def _resolve(self, spec: ModelSpec, oauth: OAuthAuth | None = None) -> tuple[Any, dict[str, str]]:
        auth = self.credentials.resolve(self.spec, oauth)
        env = os.environ if self.credentials.env is None else self.credentials.env
        headers = resolve_headers(spec.headers, env=env, what=f'model header of "{spec.provider}/{spec.id}":')
        return auth, headers


_INFOS: dict[int, tuple[ProviderSpec, list[ModelInfo]]] = {}


_MODELS: dict[int, tuple[ProviderSpec, dict[str, ModelSpec]]] = {}


def _models(spec: ProviderSpec) -> dict[str, ModelSpec]:
    """The models by id, built once per (cached, immutable) catalog provider spec; every provider gets
    its own copy (``add_custom_model`` adds to it). Every replacement composes the providers afresh."""
    cached = _MODELS.get(id(spec))
    if cached is not None and cached[0] is spec:
        return dict(cached[1])
    models = {m.id: m for m in spec.models}
    if not spec.configured:
        _MODELS[id(spec)] = (spec, models)
    return dict(models)


def _infos(spec: ProviderSpec) -> list[ModelInfo]:
    """``ModelInfo`` per model, computed once per (cached, immutable) catalog provider spec."""
    cached = _INFOS.get(id(spec))
    if cached is not None and cached[0] is spec:
        return list(cached[1])
    infos = [m.info() for m in spec.models]
    if not spec.configured:
        _INFOS[id(spec)] = (spec, infos)
    return list(infos)


def _fail(message: dict[str, Any], text: str, *, secrets: tuple[str, ...] = ()) -> AssistantMessageEvent:
    message["stopReason"] = "error"
    message["errorMessage"] = Redactor(extra_secrets=secrets).redact_and_cut(text, MAX_ERROR_CHARS)
    log.warning("provider %s: %s", message.get("provider"), message["errorMessage"])
    return {"type": "error", "reason": "error", "error": message}


def build_providers(
    agent_dir: str,
    *,
    settings: Mapping[str, Any] | None = None,
    runtime_keys: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> tuple[list[RemoteProvider], list[Diagnostic]]:
    """Every provider Pi would know for ``agent_dir`` (catalog, models.json, auth.json)."""
    config = load_models_config(agent_dir)
    specs, compose_diagnostics = compose_providers(with_stored_models(builtin_catalog(), agent_dir), config)
    stored, auth_diagnostics = load_auth_file(agent_dir)
    credentials = Credentials(stored=stored, runtime_keys=dict(runtime_keys or {}), env=env,
                              auth_path=os.path.join(agent_dir, AUTH_FILE))
    request_settings = RequestSettings.from_settings(settings or {}, env)
    providers = [
        RemoteProvider(spec, credentials=credentials, settings=request_settings, transport=transport)
        for spec in specs.values()
    ]
    diagnostics = [*config.diagnostics, *compose_diagnostics, *auth_diagnostics]
    for spec in specs.values():
        if not spec.configured:
            continue
        unsupported = sorted({m.api for m in spec.models if m.api not in SUPPORTED_APIS})
        if unsupported and spec.builtin is None:
            diagnostics.append(Diagnostic(
                "warning",
                f'Provider "{spec.name}": api {", ".join(unsupported)} is not supported by rpcd '
                f"(supported: {', '.join(sorted(SUPPORTED_APIS))}); those models are unavailable",
            ))
    for provider, credential in stored.items():
        if credential.type == "oauth" and provider in specs and credentials.check(specs[provider]) is None:
            diagnostics.append(Diagnostic("warning", f"auth.json: {credentials.why_unusable(specs[provider])}"))
    return providers, diagnostics


def _built(module: ModuleType, spec: ModelSpec, ctx: CallContext, messages: Sequence[Mapping[str, Any]],
           message: dict[str, Any], *, encode: bool) -> tuple[HttpRequest, Any]:
    """The request for ``messages`` and the parser of its answer; with ``encode``, the body is the bytes
    to send: what was built for them (the converted messages, the body's dicts) is freed on return."""
    from rpcd.providers.transform import convert_to_llm

    ctx = attrs.evolve(ctx, messages=convert_to_llm(messages))
    http_request = module.build_request(spec, ctx)
    return (_encoded(http_request) if encode else http_request), module.Parser(message, spec, ctx)


def _encoded(http_request: HttpRequest) -> HttpRequest:
    """``http_request`` with its body encoded once, for every attempt, and the dict let go."""
    if http_request.content is not None:
        return http_request
    return attrs.evolve(http_request, body={}, content=encode_body(http_request.body))
