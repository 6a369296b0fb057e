"""Google Vertex AI (``api: "google-vertex"``), as pi-ai's ``google-vertex.ts`` speaks it through
``@google/genai`` in Vertex mode.

Authentication: a Vertex API key (stored, or ``GOOGLE_CLOUD_API_KEY``) in ``x-goog-api-key``; else
application-default credentials (``google-auth``: the file named by
``GOOGLE_APPLICATION_CREDENTIALS`` or gcloud's ``application_default_credentials.json`` — a user
login, a service account, workload identity federation), refreshed before they expire, as
``Authorization: Bearer`` (plus ``x-goog-user-project`` when the credentials name a quota
project), with ``GOOGLE_CLOUD_PROJECT`` (or ``GCLOUD_PROJECT``) and ``GOOGLE_CLOUD_LOCATION``.

Where (the SDK's rules): ``{base}/v1/projects/{project}/locations/{location}/publishers/google/
models/{id}:streamGenerateContent?alt=sse`` with ``base`` = ``https://{location}-aiplatform.googleapis.com``
(``https://aiplatform.googleapis.com`` for ``global``, ``https://aiplatform.{us|eu}.rep.googleapis.com``
for the multi-regions); with an API key ``https://aiplatform.googleapis.com/v1/publishers/google/
models/{id}:…``; a models.json ``baseUrl`` without ``{location}`` replaces the whole prefix
(``{baseUrl}[/v1]/publishers/google/models/{id}:…``).

Body and stream: Gemini's (``google``), with Vertex's thinking rules (no Gemma 4 levels, no
Flash-Lite budgets). Nothing here is imported before the first Vertex call; ``google-auth`` only
when application-default credentials are used.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

import anyio
import attrs

from rpcd.providers.call import CallContext, merge_headers
from rpcd.providers.credentials import ResolvedAuth
from rpcd.providers.google import GoogleParser
from rpcd.providers.google import build_body as gemini_body
from rpcd.providers.http import HttpRequest, StreamError
from rpcd.providers.models_config import ModelSpec

API: Final = "google-vertex"
API_VERSION: Final = "v1"
SCOPE: Final = "https://www.googleapis.com/auth/cloud-platform"
CREDENTIALS_MARKER: Final = "gcp-vertex-credentials"
MULTI_REGIONS: Final = frozenset({"us", "eu"})
ADC_PATH: Final = "~/.config/gcloud/application_default_credentials.json"
_PLACEHOLDER: Final = re.compile(r"^<[^>]+>$")
_VERSION_PART: Final = re.compile(r"^v\d+(?:beta\d*)?$")


def api_key(ctx: CallContext) -> str | None:
    """pi-ai ``resolveApiKey``: the marker and ``<placeholder>`` values mean "use ADC"."""
    key = (ctx.auth.api_key or "").strip()
    if not key or key == CREDENTIALS_MARKER or _PLACEHOLDER.match(key):
        return None
    return key


def project(ctx: CallContext) -> str:
    found = ctx.env_value("GOOGLE_CLOUD_PROJECT") or ctx.env_value("GCLOUD_PROJECT")
    if not found:
        raise StreamError("Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project "
                          "in options.")
    return found


def location(ctx: CallContext) -> str:
    found = ctx.env_value("GOOGLE_CLOUD_LOCATION")
    if not found:
        raise StreamError("Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options.")
    return found


def custom_base_url(model: ModelSpec) -> str | None:
    trimmed = model.base_url.strip()
    return None if not trimmed or "{location}" in trimmed else trimmed


def request_url(model: ModelSpec, ctx: CallContext) -> str:
    """The SDK's ``constructUrl`` for ``generateContentStream``."""
    key = api_key(ctx)
    custom = custom_base_url(model)
    model_path = f"publishers/google/models/{quote(model.id, safe='-._~@')}:streamGenerateContent"
    if custom is not None:
        base = custom.rstrip("/")
        version = "" if any(_VERSION_PART.match(p) for p in base.split("//", 1)[-1].split("/")[1:]) else API_VERSION
        prefix = f"{base}/{version}" if version else base
        return f"{prefix}/{model_path}?alt=sse"
    if key is not None:
        return f"https://aiplatform.googleapis.com/{API_VERSION}/{model_path}?alt=sse"
    loc = location(ctx)
    proj = project(ctx)
    if loc == "global":
        host = "https://aiplatform.googleapis.com"
    elif loc in MULTI_REGIONS:
        host = f"https://aiplatform.{loc}.rep.googleapis.com"
    else:
        host = f"https://{loc}-aiplatform.googleapis.com"
    return f"{host}/{API_VERSION}/projects/{quote(proj, safe='')}/locations/{quote(loc, safe='')}/{model_path}?alt=sse"


# -- application-default credentials --------------------------------------------------------


class _Adc:
    """One ``google-auth`` credentials object per ADC file, refreshed under a lock (threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_path: dict[str, Any] = {}

    def headers(self, path: str | None, timeout: float) -> dict[str, str]:
        import google.auth

        key = path or ADC_PATH
        with self._lock:
            credentials = self._by_path.get(key)
            if credentials is None:
                credentials = _load(path)
                self._by_path[key] = credentials
            if not credentials.valid:  # no token yet, or within google-auth's refresh threshold of expiry
                try:
                    credentials.refresh(httpx_auth_request(timeout))
                except google.auth.exceptions.GoogleAuthError as exc:
                    raise StreamError(f"Google application-default credentials could not be refreshed: "
                                      f"{type(exc).__name__}") from None
            headers: dict[str, str] = {}
            credentials.apply(headers)
            return headers

    def forget(self) -> None:
        with self._lock:
            self._by_path.clear()


def _load(path: str | None) -> Any:
    """The ADC file's credentials, by its ``type`` (the loaders google-auth recommends over the
    generic, deprecated ``load_credentials_from_file``): a gcloud user login, a service account,
    workload identity federation."""
    import json
    import os

    target = os.path.expanduser(path or ADC_PATH)
    try:
        with open(target, encoding="utf-8") as handle:
            info = json.load(handle)
    except (OSError, ValueError):
        raise StreamError(f"Could not read Google application-default credentials from {target}") from None
    kind = info.get("type") if isinstance(info, dict) else None
    try:
        if kind == "service_account":
            from google.oauth2 import service_account

            return service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
                info, scopes=[SCOPE])
        if kind == "authorized_user":
            from google.oauth2 import credentials

            return credentials.Credentials.from_authorized_user_info(  # type: ignore[no-untyped-call]
                info, scopes=[SCOPE])
        if kind == "external_account":
            source = info.get("credential_source")
            if isinstance(source, dict) and source.get("environment_id", "").startswith("aws"):
                from google.auth import aws

                return aws.Credentials.from_info(info, scopes=[SCOPE])  # type: ignore[no-untyped-call]
            from google.auth import identity_pool

            return identity_pool.Credentials.from_info(info, scopes=[SCOPE])  # type: ignore[no-untyped-call]
    except (ValueError, KeyError) as exc:
        raise StreamError(f"Invalid Google application-default credentials in {target}: "
                          f"{type(exc).__name__}") from None
    raise StreamError(f"Unsupported Google application-default credentials type {kind!r} in {target}")


ADC = _Adc()


def httpx_auth_request(timeout: float) -> Any:
    """google-auth's ``transport.Request`` over httpx (google-auth's own needs ``requests``)."""
    import google.auth.exceptions
    import google.auth.transport
    import httpx

    class Response(google.auth.transport.Response):
        def __init__(self, response: httpx.Response) -> None:
            self._response = response

        @property
        def status(self) -> int:
            return self._response.status_code

        @property
        def headers(self) -> Mapping[str, str]:
            return self._response.headers

        @property
        def data(self) -> bytes:
            return self._response.content

    class Request(google.auth.transport.Request):
        def __call__(self, url: str, method: str = "GET", body: Any = None, headers: Any = None,
                     timeout: float | None = None, **kwargs: Any) -> Response:
            try:
                with httpx.Client(timeout=timeout or default_timeout) as client:
                    return Response(client.request(method, url, content=body, headers=headers))
            except httpx.HTTPError as exc:
                raise google.auth.exceptions.TransportError(type(exc).__name__) from None  # type: ignore[no-untyped-call]

    default_timeout = timeout
    return Request()


async def authorize(model: ModelSpec, ctx: CallContext) -> CallContext:
    """Add the ADC bearer token when there is no API key (off the event loop: it may refresh)."""
    if api_key(ctx) is not None:
        return ctx
    project(ctx)
    location(ctx)
    path = ctx.env_value("GOOGLE_APPLICATION_CREDENTIALS")
    headers = await anyio.to_thread.run_sync(ADC.headers, path, 30.0)
    auth = ctx.auth
    return attrs.evolve(ctx, auth=ResolvedAuth(api_key=auth.api_key, headers={**auth.headers, **headers},
                                               source=auth.source, env=auth.env))


PART_ORDER: Final = ("mediaResolution", "codeExecutionResult", "executableCode", "fileData", "functionCall",
                     "functionResponse", "inlineData", "text", "thought", "thoughtSignature", "videoMetadata")
DECLARATION_ORDER: Final = ("description", "name", "parameters", "parametersJsonSchema", "response",
                            "responseJsonSchema")


def _ordered(value: Mapping[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    return {key: value[key] for key in order if value.get(key) is not None}


def _content(content: Mapping[str, Any]) -> dict[str, Any]:
    return {"parts": [_ordered(part, PART_ORDER) for part in content.get("parts") or ()], "role": content.get("role")}


def vertex_order(body: dict[str, Any]) -> dict[str, Any]:
    """The body with the key order ``@google/genai``'s Vertex converters write (``contentToVertex``,
    ``partToVertex``, ``functionDeclarationToVertex``): the same JSON as Gemini's, byte for byte as Pi sends it."""
    body["contents"] = [_content(c) for c in body.get("contents") or ()]
    if isinstance(body.get("systemInstruction"), Mapping):
        body["systemInstruction"] = _content(body["systemInstruction"])
    for tool in body.get("tools") or ():
        if isinstance(tool, dict) and tool.get("functionDeclarations"):
            tool["functionDeclarations"] = [_ordered(d, DECLARATION_ORDER) for d in tool["functionDeclarations"]]
    return body


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    body = vertex_order(gemini_body(model, ctx, vertex=True))
    headers = merge_headers(model.static_headers, ctx.options_headers)
    key = api_key(ctx)
    if key is not None and not any(k.lower() in ("x-goog-api-key", "authorization") for k in headers):
        headers["x-goog-api-key"] = key
    return HttpRequest(url=request_url(model, ctx), headers=headers, body=body,
                       secrets=(*ctx.auth.secrets, *ctx.headers.values()))


class VertexParser(GoogleParser):
    unfinished = "Google Vertex stream ended without a finish reason"


Parser = VertexParser
