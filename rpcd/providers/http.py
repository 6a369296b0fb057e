"""The HTTP side every streaming API shares: timeouts, Pi's provider-level retry, SSE,
strict chunk decoding, error texts, redaction, and the event protocol of one call.

An API module (``openai_compat``, ``anthropic``, ``openai_responses``, ``google``) only
says *what* to send (``HttpRequest``) and *how to read* the events it gets back (a
``StreamParser``); ``stream_call`` does the rest the same way for all of them:

* **Timeouts** (``Timeouts.from_settings``): connect, and read = the silence allowed
  between two chunks (Pi's ``httpIdleTimeoutMs``, 300 s; ``0`` disables it), plus an
  optional bound on the wait for the response headers (``retry.provider.timeoutMs``).
* **Provider-level retry** (``ProviderRetry``): pi-ai's ``retryProviderRequest`` — only
  while no response has started; ``retry.provider.maxRetries`` attempts (Pi's default
  0) on a connection error, a timeout, 408/409/429/5xx (or ``x-should-retry: true``),
  waiting ``retry-after-ms`` / ``retry-after`` when the server says, else
  min(0.5 s × 2^n, 8 s); a server asking for more than ``retry.provider.maxRetryDelayMs``
  (60 s) fails at once. The *visible* retries (``auto_retry_*`` events, Pi's
  ``retry.maxRetries``) happen one level up, in the session (``rpcd.runtime.turns.retry``).
* **Failures** never escape as exceptions: an HTTP error status, a transport failure, a
  malformed or non-finite chunk, a stream that stops early — each ends the call with an
  ``error`` event whose assistant message keeps every block received so far
  (``stopReason: "error"``, ``errorMessage`` redacted *before* it is cut).
* **Cancellation** (abort): the response lives in ``async with`` blocks, so the
  connection is closed before the cancellation leaves the generator.
* **Secrets**: the resolved key lives only in the request headers; every text that
  leaves (``errorMessage``, log lines) goes through ``Redactor`` extended with this
  request's key and header values, *then* is cut.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import logging
import os
import random
import re
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio
import attrs

from rpcd.core import codec
from rpcd.core.redact import Redactor
from rpcd.providers.base import AssistantMessageEvent
from rpcd.providers.jsonstream import NonFiniteNumberError, loads_strict
from rpcd.providers.sse import SseEvent, iter_sse

if TYPE_CHECKING:
    import httpx

    from rpcd.providers.h1 import H1Pool
    from rpcd.providers.warmup import ModelPathWarmup

log = logging.getLogger("rpcd.providers.http")

MAX_ERROR_CHARS: Final = 4000
"""pi-ai's ``MAX_PROVIDER_ERROR_BODY_CHARS``: the longest provider text kept in an ``errorMessage``."""
DEFAULT_IDLE_TIMEOUT_S: Final = 300.0
DEFAULT_CONNECT_TIMEOUT_S: Final = 10.0
DEFAULT_MAX_RETRY_DELAY_S: Final = 60.0


def _ms_setting(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value) / 1000
    return None


def _section(settings: Mapping[str, Any], *path: str) -> Mapping[str, Any]:
    node: Any = settings
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


@attrs.frozen
class Timeouts:
    """httpx timeouts in seconds; ``read`` bounds the silence between two chunks, not the turn."""

    connect: float = DEFAULT_CONNECT_TIMEOUT_S
    read: float | None = DEFAULT_IDLE_TIMEOUT_S
    write: float = 30.0
    pool: float = 10.0
    headers: float | None = None
    """Bound on the wait for the response headers (``retry.provider.timeoutMs``); ``None``: read."""

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Timeouts:
        """``httpIdleTimeoutMs`` (Pi; ``0`` = no limit), ``httpConnectTimeoutMs`` (rpcd),
        ``retry.provider.timeoutMs`` (Pi)."""
        idle = _ms_setting(settings.get("httpIdleTimeoutMs"))
        connect = _ms_setting(settings.get("httpConnectTimeoutMs"))
        headers = _ms_setting(_section(settings, "retry", "provider").get("timeoutMs"))
        return cls(
            connect=connect if connect else DEFAULT_CONNECT_TIMEOUT_S,
            read=DEFAULT_IDLE_TIMEOUT_S if idle is None else (idle or None),
            headers=headers or None,
        )

    def to_httpx(self) -> httpx.Timeout:
        import httpx

        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.pool)


@attrs.frozen
class ProviderRetry:
    """pi-ai's ``retryProviderRequest`` policy (``retry.provider`` settings)."""

    max_retries: int = 0
    max_delay: float = DEFAULT_MAX_RETRY_DELAY_S
    """A server asking for a longer wait fails at once; ``0`` disables the cap."""
    jitter: bool = True

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> ProviderRetry:
        section = _section(settings, "retry", "provider")
        retries = section.get("maxRetries")
        cap = _ms_setting(section.get("maxRetryDelayMs"))
        return cls(
            max_retries=int(retries) if isinstance(retries, int | float) and not isinstance(retries, bool)
            and retries > 0 else 0,
            max_delay=DEFAULT_MAX_RETRY_DELAY_S if cap is None else cap,
        )

    def delay(self, failure: HttpFailure, retry_index: int) -> float:
        """Seconds before retry ``retry_index`` (0-based); raises ``HttpFailure`` when the server
        asks for more than the cap (Pi: ``Server requested Ns retry delay (max: Ms). …``)."""
        requested = failure.retry_after
        if requested is not None:
            if self.max_delay > 0 and requested > self.max_delay:
                raise HttpFailure(
                    f"Server requested {_ceil(requested)}s retry delay (max: {_ceil(self.max_delay)}s). "
                    f"{failure.message}",
                    status=failure.status,
                )
            return requested
        base = min(0.5 * 2.0**retry_index, 8.0)
        return float(base * (1 - random.random() * 0.25)) if self.jitter else float(base)


def _ceil(seconds: float) -> int:
    whole = int(seconds)
    return whole if whole == seconds else whole + 1


class HttpFailure(Exception):
    """A request that got no usable response: an HTTP error status or a transport failure
    before any content. ``status`` is ``None`` for a connection error or timeout."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.headers = dict(headers or {})
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """pi-ai's ``isRetryableProviderError`` (the SDKs' own rule)."""
        should = self.headers.get("x-should-retry")
        if should == "true":
            return True
        if should == "false":
            return False
        if self.status is None:
            return True
        return self.status in (408, 409, 429) or self.status >= 500


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds a server asks us to wait: ``retry-after-ms``, else ``retry-after`` (seconds or
    an HTTP date). ``None`` when it says nothing usable."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    import email.utils  # an HTTP-date Retry-After only (not at startup)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def json_or_none(body: bytes) -> Any:
    try:
        return loads_strict(body.decode("utf-8", "replace"))
    except ValueError:
        return None


def sdk_status_message(status: int, error: Any, text: str) -> str:
    """The Anthropic/OpenAI SDKs' ``APIError.makeMessage``: ``<status> <error.message>``, else
    ``<status> <JSON of error>``, else ``<status> <body text>``, else ``<status> status code (no body)``."""
    if isinstance(error, Mapping) and error.get("message"):
        message = error["message"]
        msg = message if isinstance(message, str) else json.dumps(message, separators=(",", ":"))
    elif error:
        msg = json.dumps(error, separators=(",", ":"), ensure_ascii=False)
    else:
        msg = text
    return f"{status} {msg}" if msg else f"{status} status code (no body)"


def js_json_parse_error(text: str) -> str:
    """V8's ``JSON.parse`` message for a body that is not JSON (what an SDK that calls
    ``response.json()`` on it surfaces)."""
    if not text.strip():
        return "Unexpected end of JSON input"
    stripped = text.lstrip()
    if len(text) < 21:  # V8 quotes a source shorter than 2 x 10 + 1 characters whole
        return f'Unexpected token \'{stripped[0]}\', "{text}" is not valid JSON'
    shown = stripped[:10]
    return f'Unexpected token \'{stripped[0]}\', "{shown}"... is not valid JSON'


def transport_message(exc: BaseException) -> str:
    """A transport failure in the words Pi's SDKs start with (what Pi's retry rules look for), then
    where and why — the host and port, and the system's reason (``Connection refused``, ``Name or
    service not known``) — never an httpx message, nor the URL's path or query (which may hold a key).
    The direct client's failures (``rpcd.providers.h1``) read as httpx's of the same kind."""
    from rpcd.providers import h1

    if isinstance(exc, h1.H1Error):
        where: str | None = exc.where
        timed_out, cut = isinstance(exc, h1.TimedOut), isinstance(exc, h1.Closed)
    else:
        import httpx

        where = _host_of(exc)
        timed_out = isinstance(exc, httpx.TimeoutException)
        cut = isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError)
    if timed_out:
        return f"Request timed out ({where})." if where else "Request timed out."
    if cut:
        return "Connection error: the connection was closed before the response completed (terminated)."
    cause = _system_reason(exc)
    if where:
        return f"Connection error: cannot reach {where}" + (f" ({cause})." if cause else ".")
    return f"Connection error ({cause})." if cause else "Connection error."


def transport_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a call's transport raises: the direct client's, and httpx's once httpx is loaded
    (a process that never imported httpx cannot meet one; evaluated only when something was raised)."""
    import sys

    from rpcd.providers.h1 import H1Error

    httpx = sys.modules.get("httpx")
    return (H1Error,) if httpx is None else (H1Error, httpx.HTTPError)


def _host_of(exc: BaseException) -> str | None:
    try:
        url = exc.request.url  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # httpx raises RuntimeError for an exception without a request
        return None
    host = getattr(url, "host", None)
    if not host:
        return None
    port = getattr(url, "port", None) or {"https": 443, "http": 80}.get(str(getattr(url, "scheme", "")))
    return f"{host}:{port}" if port else str(host)


def _system_reason(exc: BaseException) -> str | None:
    """The OS's words for the first system error under ``exc`` (its causes and contexts)."""
    seen: set[int] = set()
    queue: list[BaseException] = [exc]
    fallback: str | None = None
    while queue:
        current = queue.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ssl.SSLError):  # its errno is OpenSSL's, not the OS's
            detail = getattr(current, "verify_message", None) or current.reason or current.strerror
            return f"TLS: {detail}" if detail else "TLS handshake failed"
        if isinstance(current, OSError):
            if isinstance(current.errno, int) and current.errno > 0:
                return os.strerror(current.errno)  # the system's words: "Connection refused", "No route to host"
            if current.errno is not None and current.strerror:
                return str(current.strerror)  # a resolver's (gaierror): "Name or service not known"
            fallback = fallback or (str(current.args[0]) if current.args else None)
        if isinstance(current, BaseExceptionGroup):  # every address tried (happy eyeballs)
            queue.extend(current.exceptions)
        queue.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    if fallback:
        return fallback
    text = str(exc)
    found = re.search(r"\[Errno -?\d+\] ([^\]\[]+?)\s*$", text)  # httpx keeps only the text of some errors
    return found.group(1) if found else None


@attrs.frozen
class HttpRequest:
    """One streaming POST: where, with which headers (credentials included) and body."""

    url: str
    headers: Mapping[str, str] = attrs.field(repr=False)
    body: Mapping[str, Any] = attrs.field(repr=False)
    secrets: tuple[str, ...] = attrs.field(default=(), repr=False)
    """Resolved values (keys, header values) this request must never echo."""
    content: bytes | None = attrs.field(default=None, repr=False)
    """The body already encoded (a signed request: SigV4 covers these bytes); ``None``: ``body`` as JSON."""
    framing: str = "sse"
    """How the response stream is framed: ``sse``, or ``aws-eventstream`` (Bedrock's binary messages)."""
    sdk_attempts: int = 1
    """Attempts the vendor SDK Pi uses makes on its own (the AWS SDK: 3) before any configured retry."""


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The JSON body exactly as ``JSON.stringify`` writes it (``rpcd.core.codec``: numbers, lone
    surrogates escaped, deep values without recursion)."""
    return codec.dumps(body)


class StreamParser(Protocol):
    """Reads one API's events into the assistant message; every API module implements it."""

    message: dict[str, Any]

    def feed(self, event: SseEvent) -> list[AssistantMessageEvent]:
        """Events for one SSE event; raise ``StreamError`` for a provider-reported failure."""
        ...

    def close(self) -> list[AssistantMessageEvent]:
        """End the blocks still open (after the last event, or a cut: partial content is kept)."""
        ...

    def finish(self) -> None:
        """Settle ``stopReason``; raise ``StreamError`` if the stream ended without a result."""
        ...

    def error_message(self, status: int, body: bytes, headers: Mapping[str, str], reason: str = "") -> str:
        """The ``errorMessage`` of an HTTP error status, worded as Pi's SDK for this API words it."""
        ...


class StreamError(Exception):
    """The stream itself reported a failure (an ``error`` event, a refusal, a bad chunk)."""


def decode_chunk(event: SseEvent, provider: str) -> Any:
    """One ``data:`` payload as JSON; a non-JSON or non-finite value is a ``StreamError``."""
    try:
        return loads_strict(event.data)
    except NonFiniteNumberError:
        raise StreamError(f'Provider "{provider}" sent a non-finite number in a stream chunk') from None
    except ValueError:
        raise StreamError(f'Provider "{provider}" sent a malformed stream chunk (not JSON)') from None


class RequestRedactor:
    """The redactor of one request (``request_redactor``), built on its first use: only a failure or a
    retry redacts, so a call that streams fine never scans the environment for secrets."""

    def __init__(self, env: Mapping[str, str] | None, secrets: Sequence[str]) -> None:
        self._env = env
        self._secrets = tuple(secrets)

    @functools.cached_property
    def redactor(self) -> Redactor:
        return request_redactor(self._env, self._secrets)

    def redact_and_cut(self, text: str, limit: int) -> str:
        return self.redactor.redact_and_cut(text, limit)


def request_redactor(env: Mapping[str, str] | None, secrets: Sequence[str]) -> Redactor:
    """The redactor of one request: the environment's secrets and this request's values — a header's
    ``Bearer <token>`` also as the bare token (servers echo it without the scheme)."""
    values = [s for s in secrets if s]
    values += [s.split(" ", 1)[1] for s in values if s[:7].lower() in ("bearer ", "basic ") and " " in s]
    return Redactor(env=os.environ if env is None else env, extra_secrets=tuple(values))


def unauthorized_message(provider: str, status: int) -> str:
    """rpcd's 401/403 text: no excerpt of the body (servers echo keys in it)."""
    return (
        f'{status} Provider "{provider}" rejected the request as unauthorized; check the credentials '
        f'for "{provider}" (--api-key, the environment, auth.json or models.json)'
    )


async def stream_call(
    *,
    provider: str,
    request: HttpRequest,
    parser: StreamParser,
    timeouts: Timeouts,
    retry: ProviderRetry,
    env: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    on_response: Callable[[int, Mapping[str, str]], Awaitable[None]] | None = None,
    reauthorize: Callable[[], Awaitable[HttpRequest | None]] | None = None,
) -> AsyncGenerator[AssistantMessageEvent, None]:
    """Run one model call; yields Pi's ``start`` … ``done``/``error`` (``base`` module doc).
    ``on_response(status, headers)`` runs once the response to stream is there, before its body is
    read (a failed attempt that is retried does not count). ``reauthorize``: after a 401, once, the
    same request with fresh credentials (an OAuth login refreshed), or ``None`` to report the 401."""
    message = parser.message
    redactor = RequestRedactor(env, request.secrets)
    async with _clients_for(transport) as clients:
        retry_index = 0
        while True:
            body = request.content if request.content is not None else encode_body(request.body)
            headers = {"Content-Type": "application/json", **request.headers}
            problem: HttpFailure | None = None
            try:
                async with clients.open(request.url, body, headers, timeouts) as response:
                    if response.status_code >= 400:
                        raw = await response.aread()
                        status = response.status_code
                        text = (unauthorized_message(provider, status) if status in (401, 403)
                                else parser.error_message(status, raw, response.headers, response.reason_phrase))
                        problem = HttpFailure(text, status=status, headers=response.headers,
                                              retry_after=parse_retry_after(response.headers))
                    else:
                        if on_response is not None:
                            await on_response(response.status_code,
                                              {k.lower(): v for k, v in response.headers.items()})
                        yield {"type": "start", "partial": message}
                        # closed with this generator: a consumer stopping at ``done`` ends the exchange
                        # then (its connection kept for the next call), not when the collector finds it
                        async with contextlib.aclosing(_consume(response, parser, provider, redactor,
                                                                 request.framing)) as events:
                            async for event in events:
                                yield event
                        return
            except transport_errors() as exc:  # before any content: connect errors, timeouts waiting for headers
                problem = HttpFailure(transport_message(exc))
            assert problem is not None
            if problem.status == 401 and reauthorize is not None:
                again, reauthorize = reauthorize, None
                try:
                    fresh = await again()
                except Exception as exc:  # a failed refresh says why, in place of the bare 401
                    yield _error(message, str(exc), redactor, provider)
                    return
                if fresh is not None:
                    redactor = RequestRedactor(env, (*request.secrets, *fresh.secrets))
                    request = fresh
                    log.info("provider %s: 401 with the stored login; retrying once with it refreshed", provider)
                    continue
            delay: float | None = None
            if retry_index < max(retry.max_retries, request.sdk_attempts - 1) and problem.retryable \
                    and problem.status not in (401, 403):
                try:
                    delay = retry.delay(problem, retry_index)
                except HttpFailure as capped:
                    problem = capped
            if delay is None:
                yield _error(message, problem.message, redactor, provider)
                return
            retry_index += 1
            log.info("provider %s: retry %d/%d in %.2fs: %s", provider, retry_index, retry.max_retries, delay,
                     redactor.redact_and_cut(problem.message, 300))
            await anyio.sleep(delay)


class StreamedResponse(Protocol):
    """What a call reads of a response, from httpx or the direct client (``rpcd.providers.h1``)."""

    @property
    def status_code(self) -> int: ...
    @property
    def reason_phrase(self) -> str: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    async def aread(self) -> bytes: ...
    def aiter_bytes(self) -> AsyncIterator[bytes]: ...
    def aiter_lines(self) -> AsyncIterator[str]: ...


class HttpClients:
    """The connections kept for the life of ``keep_connections()``: a model call then goes over the
    connection (and TLS session) an earlier call left open, as Pi's ``fetch`` reuses its own, instead of
    a new TCP connection and TLS handshake for every call (every turn and every tool round).

    A call goes through the direct client (``rpcd.providers.h1``) where it sends exactly what httpx
    would (``h1.direct_ok``: no proxy in the environment, a plain URL and headers); otherwise, and always
    for an injected ``transport`` (the tests' fault injection), through httpx: one client per TLS
    context, the timeouts going with each request. An aborted stream closes its connection either way
    (neither keeps a connection whose response was not read to the end)."""

    def __init__(self, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._transport = transport
        self._clients: dict[int, tuple[ssl.SSLContext, httpx.AsyncClient]] = {}
        self._direct: H1Pool | None = None
        self.warmup: ModelPathWarmup | None = None
        """The model path's warm-up (``warm_up``): at most one for the life of these clients."""

    def open(self, url: str, body: bytes, headers: Mapping[str, str],
             timeouts: Timeouts) -> contextlib.AbstractAsyncContextManager[StreamedResponse]:
        """``async with clients.open(...) as response``: the POST sent and its response's head read."""
        if self._transport is None:
            from rpcd.providers import h1

            if h1.direct_ok(url, headers):
                return self.direct().stream(url, body, headers, connect=timeouts.connect, write=timeouts.write,
                                            read=timeouts.read, headers_bound=timeouts.headers)
        return _open(self.client(tls_context()), url, body, headers, timeouts)

    def warm_up(self, api_module: str | None = None, url: str | None = None) -> ModelPathWarmup:
        """Import and build, in the background, what the first model call (to ``url``, when known) would
        (``rpcd.providers.warmup``), the API module ``api_module`` included; once: later calls return the
        warm-up already made. A call the direct client makes to an ``http://`` URL builds no TLS context."""
        if self.warmup is None:
            from rpcd.providers import warmup

            modules = (*warmup.REQUEST_MODULES, *((api_module,) if api_module else ()))
            # which client the call takes, decided once, by the first step that asks (off the loop)
            direct = functools.cache(functools.partial(self._direct_for, url))
            self.warmup = warmup.ModelPathWarmup(
                [functools.partial(self._transport_for, direct), *(warmup.importing(name) for name in modules)],
                [warmup.importing(name) for name in warmup.ANSWER_MODULES],
                beside=[functools.partial(self._tls_for, url, direct)],
                on_ready=functools.partial(self._build_for, direct),
            )
        self.warmup.start()
        return self.warmup

    def stop_warming(self) -> None:
        """The orderly end has begun: a warm-up not yet started never starts, one under way stops."""
        if self.warmup is None:
            from rpcd.providers.warmup import ModelPathWarmup

            self.warmup = ModelPathWarmup(())
        self.warmup.cancel()

    def _direct_for(self, url: str | None) -> bool:
        from rpcd.providers import h1

        return self._transport is None and h1.direct_ok(url or "https://model.invalid/", {})

    def _transport_for(self, direct: Callable[[], bool]) -> None:
        """The warm-up's first step: the direct client's module, or httpx's (with httpcore's backend)."""
        if not direct():
            from rpcd.providers import warmup

            _no_httpx_cli()
            _no_sniffio_search()
            for name in warmup.HTTPX_MODULES:
                warmup.importing(name)()

    def _tls_for(self, url: str | None, direct: Callable[[], bool]) -> None:
        if not (direct() and (url or "").lower().startswith("http://")):
            tls_context()

    def _build_for(self, direct: Callable[[], bool]) -> None:
        if direct():
            self.direct()
        else:
            self.client(tls_context())

    def direct(self) -> H1Pool:
        if self._direct is None:
            from rpcd.providers.h1 import H1Pool

            self._direct = H1Pool(tls_context)
        return self._direct

    def client(self, verify: ssl.SSLContext) -> httpx.AsyncClient:
        found = self._clients.get(id(verify))
        if found is None or found[0] is not verify:
            _no_httpx_cli()
            _no_sniffio_search()
            import httpx

            found = self._clients[id(verify)] = (verify, httpx.AsyncClient(verify=verify, transport=self._transport))
        return found[1]

    async def aclose(self) -> None:
        if self._direct is not None:
            self._direct.close()
        clients, self._clients = list(self._clients.values()), {}
        for _, client in clients:
            await client.aclose()


_KEPT: contextvars.ContextVar[HttpClients | None] = contextvars.ContextVar("rpcd_http_clients", default=None)


@contextlib.asynccontextmanager
async def keep_connections() -> AsyncIterator[HttpClients]:
    """Model calls made in this context (and the tasks started in it) share kept-alive connections;
    they are closed when it ends. Outside it (a provider used on its own, the tests) each call has
    its own client, closed with the call."""
    clients = HttpClients()
    token = _KEPT.set(clients)
    try:
        yield clients
    finally:
        _KEPT.reset(token)
        with anyio.CancelScope(shield=True):
            await clients.aclose()


async def model_path_ready(url: str | None = None) -> None:
    """Before a model call (to ``url``): inside ``keep_connections()``, wait for the model path's warm-up
    (starting it when nobody has: a TLS context loads beside the imports), so the call never duplicates
    or races it."""
    kept = _KEPT.get()
    if kept is not None:
        warm = kept.warmup
        if warm is None or not warm.done:
            await kept.warm_up(url=url).ready()


@contextlib.asynccontextmanager
async def _clients_for(transport: httpx.AsyncBaseTransport | None) -> AsyncIterator[HttpClients]:
    """The kept clients of this context (``keep_connections``), else ones for this call only (always for
    an injected ``transport``), closed with it."""
    kept = _KEPT.get() if transport is None else None
    if kept is not None:
        yield kept
        return
    clients = HttpClients(transport)
    try:
        yield clients
    finally:
        with anyio.CancelScope(shield=True):
            await clients.aclose()


@functools.cache
def _no_sniffio_search() -> None:
    """httpcore asks ``import sniffio`` on every request (several times); without sniffio installed (it
    is not a dependency) each attempt searched every ``sys.path`` entry again (~0.1-0.3 ms each). A
    ``None`` in ``sys.modules`` is Python's own "known to be absent": the import fails at once, and the
    same way."""
    import importlib.util
    import sys

    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


@functools.cache
def _no_httpx_cli() -> None:
    """``import httpx`` imports its command-line client (``httpx._main``: rich, click, pygments; ~40 ms)
    whenever those are installed, and rich is ours (rpcctl's terminal view). A ``None`` in
    ``sys.modules`` makes that one import fail at once; httpx then defines ``httpx.main`` as its stub
    (which says how to install the CLI). Nothing in rpcd runs httpx's command line."""
    import sys

    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def tls_context() -> ssl.SSLContext:
    """The TLS context every outgoing connection of the providers uses (built once per CA setting)."""
    return _ssl_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=4)
def _ssl_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's default TLS context, built once: loading the CA bundle costs ~20-50 ms, which every
    model call used to pay. Built as ``httpx.create_ssl_context()`` (0.28) builds it — ``SSL_CERT_FILE``,
    else ``SSL_CERT_DIR``, else certifi's bundle — without importing httpx, so the model path's warm-up
    loads it beside httpx's import (``warm_up``)."""
    if cert_file:
        return ssl.create_default_context(cafile=cert_file)
    if cert_dir:
        return ssl.create_default_context(capath=cert_dir)
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class _open:
    """``client.stream(...)`` with an optional bound on the wait for the headers."""

    def __init__(self, client: httpx.AsyncClient, url: str, body: bytes, headers: Mapping[str, str],
                 timeouts: Timeouts) -> None:
        self._cm = client.stream("POST", url, content=body, headers=dict(headers), timeout=timeouts.to_httpx())
        self._bound = timeouts.headers

    async def __aenter__(self) -> httpx.Response:
        import httpx

        if self._bound is None:
            return await self._cm.__aenter__()
        try:
            with anyio.fail_after(self._bound):
                return await self._cm.__aenter__()
        except TimeoutError:
            raise httpx.ReadTimeout("response headers timed out") from None

    async def __aexit__(self, *exc: Any) -> None:
        await self._cm.__aexit__(*exc)


def _events(response: StreamedResponse, framing: str) -> AsyncIterator[SseEvent]:
    if framing == "aws-eventstream":
        from rpcd.providers.eventstream import iter_aws_events

        return iter_aws_events(response.aiter_bytes())
    return iter_sse(response.aiter_lines())


async def _consume(
    response: StreamedResponse, parser: StreamParser, provider: str, redactor: RequestRedactor, framing: str = "sse"
) -> AsyncGenerator[AssistantMessageEvent, None]:
    message = parser.message
    failure: str | None = None
    try:
        async for sse in _events(response, framing):
            for event in parser.feed(sse):
                yield event
    except StreamError as exc:
        failure = str(exc)
    except transport_errors() as exc:
        failure = transport_message(exc)
    except UnicodeDecodeError:
        failure = f'Provider "{provider}" sent a stream that is not UTF-8'
    except ValueError as exc:  # eventstream.MalformedEventStream: a frame that does not check
        failure = str(exc)
    try:
        for event in parser.close():
            yield event
    except StreamError as exc:
        failure = failure or str(exc)
    if failure is None:
        try:
            parser.finish()
        except StreamError as exc:
            failure = str(exc)
    if failure is None and message.get("stopReason") not in ("error", "aborted"):
        yield {"type": "done", "reason": message["stopReason"], "message": message}
        return
    text = failure or str(message.get("errorMessage") or "An unknown error occurred")
    yield _error(message, text, redactor, provider)


def _error(message: dict[str, Any], text: str, redactor: RequestRedactor, provider: str) -> AssistantMessageEvent:
    message["stopReason"] = "error"
    message["errorMessage"] = redactor.redact_and_cut(text, MAX_ERROR_CHARS)
    log.warning("provider %s: %s", provider, redactor.redact_and_cut(message["errorMessage"], 300))
    return {"type": "error", "reason": "error", "error": message}
