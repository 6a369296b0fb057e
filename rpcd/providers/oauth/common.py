"""What the login flows share: endpoints that can be pointed elsewhere, PKCE (``authlib``), small
HTTP helpers that never put a token in an error, the loopback callback server raced against a
pasted code, and RFC 8628 device-code polling with Pi's timing and wording.

``authlib`` supplies PKCE (``create_s256_code_challenge``, ``generate_token``), authorization URLs
(``add_params_to_uri``) and the RFC 6749 token-request bodies (``prepare_token_request``). Its
httpx client integration is not used: in authlib 1.9 it is deprecated in favour of a client rpcd
does not ship (``httpx2``), and several of these endpoints are not RFC 6749 (JSON bodies,
Copilot's token exchange, Codex's device flow), so requests go through httpx directly.
"""

from __future__ import annotations

import contextlib
import html
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

import anyio
import attrs

from rpcd.providers.oauth import Interaction, LoginCancelled, OAuthError

REQUEST_TIMEOUT: Final = 30.0
CANCEL_MESSAGE: Final = "Login cancelled"
DEVICE_TIMEOUT_MESSAGE: Final = "Device flow timed out"
SLOW_DOWN_TIMEOUT_MESSAGE: Final = (
    "Device flow timed out after one or more slow_down responses. This is often caused by clock drift in WSL or VM "
    "environments. Please sync or restart the VM clock and try again.")
MIN_POLL_INTERVAL: Final = 1.0
DEFAULT_POLL_INTERVAL: Final = 5.0
SLOW_DOWN_INCREMENT: Final = 5.0


def endpoint(provider: str, name: str, default: str, env: Mapping[str, str]) -> str:
    """``RPCD_OAUTH_<PROVIDER>_<NAME>`` (``-`` → ``_``, upper case) if set, else ``default``."""
    variable = f"RPCD_OAUTH_{provider.upper().replace('-', '_')}_{name.upper()}"
    return (env.get(variable) or default).strip()


def callback_port(provider: str, default: int, env: Mapping[str, str]) -> int:
    """The loopback redirect's port (registered with the provider: only tests change it; 0 = any)."""
    raw = env.get(f"RPCD_OAUTH_{provider.upper().replace('-', '_')}_CALLBACK_PORT")
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


def callback_host(env: Mapping[str, str]) -> str:
    """Pi's ``PI_OAUTH_CALLBACK_HOST`` (the address the loopback server listens on)."""
    return env.get("PI_OAUTH_CALLBACK_HOST") or "127.0.0.1"


@attrs.frozen
class Pkce:
    verifier: str = attrs.field(repr=False)
    challenge: str


def pkce() -> Pkce:
    from authlib.common.security import generate_token
    from authlib.oauth2.rfc7636 import create_s256_code_challenge

    verifier = generate_token(43)
    return Pkce(verifier, create_s256_code_challenge(verifier))


def authorize_url(base: str, params: list[tuple[str, str]]) -> str:
    from authlib.common.urls import add_params_to_uri

    return str(add_params_to_uri(base, params))


def token_form(grant_type: str, **fields: str) -> dict[str, str]:
    """An RFC 6749 token request body (authlib's ``prepare_token_request``), as fields."""
    from authlib.oauth2.rfc6749.parameters import prepare_token_request

    body = prepare_token_request(grant_type, **fields)
    return {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}


# -- HTTP -----------------------------------------------------------------------------------


@attrs.frozen
class Answer:
    status: int
    reason: str
    text: str = attrs.field(repr=False)
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        import json

        try:
            return json.loads(self.text)
        except ValueError:
            return None

    def object(self) -> dict[str, Any]:
        value = self.json()
        return value if isinstance(value, dict) else {}


async def request(method: str, url: str, *, json_body: Any = None, form: Mapping[str, str] | None = None,
                  headers: Mapping[str, str] | None = None, timeout: float = REQUEST_TIMEOUT,
                  what: str = "request") -> Answer:
    """One HTTP exchange; a transport failure is an ``OAuthError`` naming ``what`` (never the URL's query)."""
    import httpx

    from rpcd.providers.http import tls_context

    try:
        async with httpx.AsyncClient(timeout=timeout, verify=tls_context()) as client:
            response = await client.request(method, url, json=json_body, data=form, headers=dict(headers or {}))
            return Answer(response.status_code, response.reason_phrase, response.text, dict(response.headers))
    except httpx.HTTPError as exc:
        raise OAuthError(f"{what} failed: {type(exc).__name__} ({_origin(url)})") from None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def jwt_claims(token: str) -> Mapping[str, Any] | None:
    from rpcd.providers.codex import jwt_claims as claims

    return claims(token)


def now_ms() -> int:
    return int(time.time() * 1000)


# -- the person's part: a pasted code or the loopback redirect -----------------------------


def parse_authorization_input(value: str) -> tuple[str | None, str | None]:
    """Pi's ``parseAuthorizationInput``: a redirect URL, ``code#state``, ``code=…&state=…`` or a bare code."""
    text = value.strip()
    if not text:
        return None, None
    parts = urlsplit(text)
    if parts.scheme and parts.netloc:
        return _code_and_state(parse_qs(parts.query))
    if "#" in text:
        code, _, state = text.partition("#")
        return code, state.split("#", 1)[0]
    if "code=" in text:
        return _code_and_state(parse_qs(text))
    return text, None


def _code_and_state(query: Mapping[str, list[str]]) -> tuple[str | None, str | None]:
    code, state = query.get("code"), query.get("state")
    return (code[0] if code else None), (state[0] if state else None)


def page(title: str, message: str, details: str | None = None) -> str:
    """The page the browser shows after the redirect (Pi's ``oauth-page``, plainer)."""
    detail = f"<p><code>{html.escape(details)}</code></p>" if details else ""
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            "<style>body{font-family:system-ui,sans-serif;background:#09090b;color:#fafafa;display:flex;"
            "align-items:center;justify-content:center;min-height:100vh;margin:0;text-align:center}</style></head>"
            f"<body><main><h1>{html.escape(title)}</h1><p>{html.escape(message)}</p>{detail}</main></body></html>")


Handler = Callable[[str, Mapping[str, str]], Awaitable[tuple[int, str, Any]]]
"""``(path, query) -> (status, page, result)``; a non-``None`` result ends the wait."""


class CallbackServer:
    """A one-shot loopback HTTP server for the OAuth redirect (GET ``path?code=…&state=…``)."""

    def __init__(self, host: str, port: int, handler: Handler) -> None:
        self.host = host
        self.port = port
        self._handler = handler
        self._result: Any = None
        self._done = anyio.Event()
        self._listener: Any = None

    @property
    def bound_port(self) -> int:
        return self.port

    async def __aenter__(self) -> CallbackServer | None:
        """``None`` when the port is taken (Pi then relies on the pasted code alone)."""
        try:
            self._listener = await anyio.create_tcp_listener(local_host=self.host, local_port=self.port)
        except OSError:
            return None
        sockname = self._listener.extra(anyio.abc.SocketAttribute.local_address)
        self.port = int(sockname[1])
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._listener is not None:
            await self._listener.aclose()

    async def wait(self) -> Any:
        """Serve until a request produces a result; answers it."""
        async with anyio.create_task_group() as group:
            async def serve() -> None:
                await self._listener.serve(self._connection, group)

            group.start_soon(serve)
            await self._done.wait()
            group.cancel_scope.cancel()
        return self._result

    async def _connection(self, stream: Any) -> None:
        async with stream:
            data = b""
            with anyio.move_on_after(10):
                while b"\r\n\r\n" not in data and len(data) < 16384:
                    chunk = await stream.receive(4096)
                    if not chunk:
                        break
                    data += chunk
            line = data.split(b"\r\n", 1)[0].decode("latin-1")
            method, _, rest = line.partition(" ")
            target = rest.rsplit(" ", 1)[0] if " " in rest else rest
            parts = urlsplit(target)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            if method != "GET":
                status, body, result = 404, page("Not found", "OAuth callback route not found."), None
            else:
                status, body, result = await self._handler(parts.path, query)
            payload = body.encode()
            reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 409: "Conflict"}.get(status, "Error")
            head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
                    f"Cache-Control: no-store\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n")
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await stream.send(head.encode() + payload)
            if result is not None and not self._done.is_set():
                self._result = result
                self._done.set()


async def code_from_browser_or_paste(server: CallbackServer | None, interaction: Interaction,
                                     prompt: Mapping[str, Any]) -> tuple[str, Any]:
    """Pi's race of the loopback redirect against the manual-code prompt: ``("callback", result)``
    or ``("manual", pasted text)``; the loser is withdrawn (a pending prompt is cancelled)."""
    outcome: list[tuple[str, Any]] = []
    async with anyio.create_task_group() as group:
        async def manual() -> None:
            value = await interaction.prompt(prompt)
            outcome.append(("manual", value))
            group.cancel_scope.cancel()

        async def browser() -> None:
            assert server is not None
            result = await server.wait()
            outcome.append(("callback", result))
            group.cancel_scope.cancel()

        group.start_soon(manual)
        if server is not None:
            group.start_soon(browser)
    if not outcome:
        raise LoginCancelled(CANCEL_MESSAGE)
    return outcome[0]


# -- RFC 8628 device code ---------------------------------------------------------------------


@attrs.frozen
class Poll:
    status: str
    """``complete`` / ``pending`` / ``slow_down`` / ``failed``."""
    value: Any = attrs.field(default=None, repr=False)
    message: str = ""
    interval: float | None = None


async def poll_device_code(poll: Callable[[], Awaitable[Poll]], *, interval: float | None,
                           expires_in: float | None, wait_first: bool = False) -> Any:
    """pi-ai ``pollOAuthDeviceCodeFlow``: the server's interval (at least 1 s, 5 s if absent), a
    ``slow_down`` adds 5 s (or takes the interval the server names), until ``expires_in``."""
    deadline = time.monotonic() + expires_in if isinstance(expires_in, int | float) else math.inf
    wait = max(MIN_POLL_INTERVAL, float(interval if interval is not None else DEFAULT_POLL_INTERVAL))
    slow_downs = 0
    if wait_first:
        remaining = deadline - time.monotonic()
        if remaining > 0:
            await anyio.sleep(min(wait, remaining))
    while time.monotonic() < deadline:
        result = await poll()
        if result.status == "complete":
            return result.value
        if result.status == "failed":
            raise OAuthError(result.message)
        if result.status == "slow_down":
            slow_downs += 1
            wait = max(MIN_POLL_INTERVAL, result.interval) if result.interval and result.interval > 0 else \
                max(MIN_POLL_INTERVAL, wait + SLOW_DOWN_INCREMENT)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        await anyio.sleep(min(wait, remaining))
    raise OAuthError(SLOW_DOWN_TIMEOUT_MESSAGE if slow_downs else DEVICE_TIMEOUT_MESSAGE)


def trusted_url(value: Any, *, https_only: bool = False) -> str | None:
    """A verification URL the person is sent to: only http(s) (https only where Pi requires it)."""
    if not isinstance(value, str) or not value:
        return None
    parts = urlsplit(value)
    allowed = ("https",) if https_only else ("https", "http")
    return value if parts.scheme in allowed and parts.netloc else None
