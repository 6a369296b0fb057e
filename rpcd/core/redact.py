"""One shared redactor for logs and error data.

Secrets reach text in two ways: a well-known credential format (``sk-...``, ``Bearer ...``,
GitHub/Slack/AWS/Google tokens, JWTs, ``password=...``) or the literal value of an environment
variable whose name says it is secret (``OPENAI_API_KEY``, ``GH_TOKEN``, ...). The second
catches provider keys in any format, as long as the daemon was given them by environment,
which is how Pi's providers are configured. URLs are a third way (``?key=...`` for Gemini,
``https://user:token@host`` for proxies): every query value and the userinfo of a URL are
masked whatever their format.

A known secret that looks like a key is also masked by its first or last eight characters and more
(``PARTIAL_CHARS``):
providers echo a key masked — ``first12…last8`` — and what they show of it is still the secret's.

Cutting text short must come *after* redaction (``redact_and_cut``): a key cut in half no
longer matches its own literal or pattern and would leak the half that remains.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import Any, Final

MASK: Final = "[REDACTED]"
MIN_ENV_SECRET_LENGTH: Final = 6
"""Shorter values (``1``, ``true``) would redact half of every message and protect nothing."""
PARTIAL_CHARS: Final = 8
"""A known secret's first or last this many characters (or more) are masked wherever they appear:
providers echo a key *masked* (``sk-proj-abcd…wxyz1234``: OpenAI shows its first 12 and last 8)."""
MIN_PARTIAL_SECRET_LENGTH: Final = 16
"""Only secrets at least this long are matched by their ends (a short one's ends are common text)."""
_SECRET_WORDS: Final = ("key", "token", "secret", "password", "passwd", "passphrase", "credential", "auth",
                        "cookie", "session_id")
"""An environment variable whose name holds one of these (in any case) holds a secret."""


class _Rules:
    """The patterns, compiled by the first redaction: a daemon that redacts nothing before its first
    answer does not pay their ~5 ms of ``re.compile`` at start-up."""

    def __init__(self) -> None:
        self.patterns = (
            re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),  # OpenAI / Anthropic style (sk-..., sk-ant-..., sk-proj-...)
            re.compile(r"\b(?:Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=\-]{6,}", re.I),
            re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
            re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
            re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
            re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
            re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),  # JWT
        )
        self.assignment = re.compile(
            # The name may carry any prefix (``access_token``, ``"x-api-key"``); it is left as it is, so the
            # pattern starts at the keyword (a leading ``[A-Za-z0-9_-]*`` made long words quadratic).
            r"""(?P<key>(?:api[_\-]?key|token|secret|password|passwd|authorization)["']?\s*[:=]\s*)"""
            r"""(?P<quote>["']?)(?P<value>[^\s"',;&}]{4,})""",
            re.I,
        )
        self.url = re.compile(r"""\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>`]+""")
        self.userinfo = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#@]*@")
        self.query_value = re.compile(r"([?&;][^=&#;\s]*=)[^&#;\s]*")


@functools.cache
def _rules() -> _Rules:
    return _Rules()


@functools.cache
def _key_like() -> re.Pattern[str]:
    """What is matched by its ends: one token of key characters with letters and digits — not a path, a
    URL or a header value with spaces (``/root/.aws/credentials`` ends in a word)."""
    return re.compile(r"(?=[^\d]*\d)(?=[^A-Za-z]*[A-Za-z])[A-Za-z0-9_\-.+=:~]{16,}")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (``OPENAI_API_KEY``, ``GH_TOKEN``)."""
    folded = name.casefold()
    return any(word in folded for word in _SECRET_WORDS)


def _redact_url(match: re.Match[str]) -> str:
    rules = _rules()
    url = rules.userinfo.sub(lambda m: f"{m[1]}{MASK}@", match[0])
    scheme, sep, rest = url.partition("://")
    host, slash, tail = rest.partition("/")
    query_at = host.find("?")
    if query_at != -1:  # no path: the query starts right after the host
        host, tail, slash = host[:query_at], host[query_at:] + slash + tail, ""
    return scheme + sep + host + slash + rules.query_value.sub(lambda m: f"{m[1]}{MASK}", tail)


def _mask_ends(text: str, secret: str) -> str:
    """``text`` with every run of ``PARTIAL_CHARS`` or more characters that starts ``secret`` (or ends
    it) masked, as far as it goes on matching."""
    head, tail = secret[:PARTIAL_CHARS], secret[-PARTIAL_CHARS:]
    if head not in text and tail not in text:
        return text
    spans: list[tuple[int, int]] = []
    at = text.find(head)
    while at != -1:
        end = at + PARTIAL_CHARS
        while end < len(text) and end - at < len(secret) and text[end] == secret[end - at]:
            end += 1
        spans.append((at, end))
        at = text.find(head, end)
    at = text.find(tail)
    while at != -1:
        start, end = at, at + PARTIAL_CHARS
        offset = len(secret) - PARTIAL_CHARS  # where the tail starts in the secret
        while start > 0 and offset > 0 and text[start - 1] == secret[offset - 1]:
            start, offset = start - 1, offset - 1
        spans.append((start, end))
        at = text.find(tail, end)
    out, last = [], 0
    for start, end in sorted(spans):
        if start < last:  # overlapping spans: one mask
            last = max(last, end)
            continue
        out += [text[last:start], MASK]
        last = end
    return "".join(out) + text[last:]


class Redactor:
    """Replace secrets in text (and in JSON-like values) by ``[REDACTED]``."""

    def __init__(self, env: Mapping[str, str] | None = None, extra_secrets: tuple[str, ...] = ()) -> None:
        source = os.environ if env is None else env
        values = {v for k, v in source.items() if is_secret_name(k) and len(v) >= MIN_ENV_SECRET_LENGTH}
        values.update(s for s in extra_secrets if len(s) >= MIN_ENV_SECRET_LENGTH)
        # Longest first so a secret containing another is masked whole.
        self._literals = sorted(values, key=len, reverse=True)
        self._key_like = frozenset(v for v in values if _key_like().fullmatch(v))

    def redact(self, text: str) -> str:
        for literal in self._literals:
            if literal in text:
                text = text.replace(literal, MASK)
            if literal in self._key_like:
                text = _mask_ends(text, literal)
        rules = _rules()
        if "://" in text:
            text = rules.url.sub(_redact_url, text)
        for pattern in rules.patterns:
            text = pattern.sub(MASK, text)
        return rules.assignment.sub(lambda m: f"{m['key']}{m['quote']}{MASK}", text)

    def redact_and_cut(self, text: str, limit: int) -> str:
        """Redact, *then* cut to ``limit`` characters (with ``…``): the only safe order."""
        redacted = self.redact(text)
        return redacted if len(redacted) <= limit else redacted[: max(limit - 1, 0)] + "…"

    def redact_value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (keys are kept: they are names, not secrets)."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {k: self.redact_value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_value(v) for v in value]
        return value


@functools.lru_cache(maxsize=1)
def default_redactor() -> Redactor:
    """The process-wide redactor, built from the environment at first use."""
    return Redactor()


def redact(text: str) -> str:
    return default_redactor().redact(text)


def redact_and_cut(text: str, limit: int) -> str:
    """``redact`` then cut to ``limit`` characters (never the other way round)."""
    return default_redactor().redact_and_cut(text, limit)
