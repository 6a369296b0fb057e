"""The person's side of a login, and the loopback servers that stand in for the providers' OAuth
endpoints (shapes from pi-ai's ``auth/oauth/*``), for ``test_logins.py`` and the Pi interop tests.

``Person`` answers prompts from a script and, like a browser, follows an ``auth_url`` notice: it
reads the authorization URL's ``redirect_uri`` (or ``callback_url``) and ``state`` and calls the
loopback redirect with a code — or, when told to paste instead, answers the manual-code prompt with
the redirect URL it would have been sent to.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio

from rpcd.providers.oauth import LoginCancelled
from tests.providers.json_server import JsonServer, Seen


def jwt(claims: Mapping[str, Any]) -> str:
    def part(value: Mapping[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2ln"


def codex_access(account: str = "acct_9f1e", n: int = 1) -> str:
    return jwt({"https://api.openai.com/auth": {"chatgpt_account_id": account}, "n": n})


class Person:
    def __init__(self, answers: Mapping[str, str] | None = None, *, paste: bool = False,
                 code: str = "auth-code-1") -> None:
        self.answers = dict(answers or {})
        self.paste = paste
        self.code = code
        self.notices: list[Mapping[str, Any]] = []
        self.prompts: list[Mapping[str, Any]] = []
        self.visits: list[tuple[int, str]] = []
        self.withdrawn = 0
        self._redirect: str | None = None
        self._threads: list[threading.Thread] = []

    def notify(self, notice: Mapping[str, Any]) -> None:
        self.notices.append(dict(notice))
        if notice.get("type") == "auth_url":
            query = parse_qs(urlsplit(str(notice["url"])).query)
            target = (query.get("redirect_uri") or query.get("callback_url") or [""])[0]
            params = {"code": self.code}
            if query.get("state"):
                params["state"] = query["state"][0]
            self._redirect = f"{target}?{urlencode(params)}"
            if not self.paste:
                thread = threading.Thread(target=self._visit, args=(self._redirect,), daemon=True)
                self._threads.append(thread)
                thread.start()

    def _visit(self, url: str) -> None:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                self.visits.append((response.status, response.read().decode()))
        except urllib.error.HTTPError as exc:
            self.visits.append((exc.code, exc.read().decode()))

    async def prompt(self, prompt: Mapping[str, Any]) -> str:
        self.prompts.append(dict(prompt))
        kind = prompt.get("type")
        if kind == "manual_code":
            if self.paste:
                assert self._redirect is not None
                return self._redirect
            try:
                await anyio.sleep_forever()  # the browser's redirect wins: this prompt is withdrawn
            finally:
                self.withdrawn += 1
        answer = self.answers.get(str(kind))
        if answer is None:
            raise LoginCancelled("declined")
        return answer

    def join(self) -> None:
        for thread in self._threads:
            thread.join(timeout=10)


class TokenEndpoint:
    """A token endpoint that rotates refresh tokens (each may be used once, as real ones are)."""

    def __init__(self, server: JsonServer, path: str, *, prefix: str = "sk-ant-oat01-access",
                 lifetime: int = 3600, delay: float = 0.0, json_body: bool = True) -> None:
        self.server = server
        self.path = path
        self.prefix = prefix
        self.lifetime = lifetime
        self.delay = delay
        self.json_body = json_body
        self.issued = 0
        self.valid_refresh: set[str] = {"refresh-0"}
        self.revoked = False
        self._lock = threading.Lock()
        server.route("POST", path, self)

    def __call__(self, seen: Seen) -> tuple[int, Any]:
        fields = seen.json if self.json_body and seen.body.startswith(b"{") else seen.form
        if self.delay:
            time.sleep(self.delay)
        with self._lock:
            grant = fields.get("grant_type")
            if grant == "refresh_token":
                token = fields.get("refresh_token")
                if self.revoked or token not in self.valid_refresh:
                    return 400, {"error": "invalid_grant", "error_description": "Refresh token is invalid"}
                self.valid_refresh.discard(token)
            self.issued += 1
            refresh = f"refresh-{self.issued}"
            self.valid_refresh.add(refresh)
            return 200, {"access_token": f"{self.prefix}-{self.issued}", "refresh_token": refresh,
                         "expires_in": self.lifetime, "token_type": "Bearer"}

    def calls(self) -> list[Seen]:
        return self.server.seen(self.path)
