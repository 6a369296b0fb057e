"""The person's side of a login at a terminal (``rpcctl login``, chat's ``/login``): the daemon's
``auth/notify`` notices are shown (the URL to open — opened in a browser when one can be — or the
device code to type) and its ``auth/prompt`` questions are asked (a choice, a text, a key read without
echo, a pasted code; the pasted-code question is withdrawn by the daemon when the browser's redirect
reached it first).
"""

from __future__ import annotations

import getpass
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from rpcd.clients import slash
from rpcd.clients.output import Printer
from rpcd.clients.terminal import LineReader
from rpcd.protocol.names import AUTH_NOTIFY


def show_notice(printer: Printer, params: Any, *, open_browser: bool = True) -> None:
    """One ``auth/notify``: say what to do."""
    notice = params.get("notice") if isinstance(params, Mapping) else None
    if not isinstance(notice, Mapping):
        return
    kind = notice.get("type")
    if kind == "auth_url":
        url = str(notice.get("url") or "")
        printer.warn(f"Open this URL to log in:\n  {url}")
        if notice.get("instructions"):
            printer.note(str(notice["instructions"]))
        if open_browser:
            _open(url)
    elif kind == "device_code":
        printer.warn(f"Go to {notice.get('verificationUri')} and enter the code: {notice.get('userCode')}")
        if open_browser and notice.get("verificationUri"):
            _open(str(notice["verificationUri"]))
    elif kind in ("progress", "info"):
        printer.note(str(notice.get("message") or ""))


def _open(url: str) -> None:
    import contextlib
    import webbrowser

    with contextlib.suppress(Exception):  # no browser here: the URL is on screen
        webbrowser.open(url, new=2)


def notices(printer: Printer, *, open_browser: bool = True) -> Callable[[str, Any], None]:
    """A notification listener that shows ``auth/notify``."""
    def listener(method: str, params: Any) -> None:
        if method == AUTH_NOTIFY:
            show_notice(printer, params, open_browser=open_browser)
    return listener


def prompt_handler(reader: LineReader) -> Callable[[Any], Awaitable[dict[str, Any]]]:
    """Answers ``auth/prompt`` from the terminal; an empty or impossible answer declines."""

    async def answer(params: Any) -> dict[str, Any]:
        prompt = params.get("prompt") if isinstance(params, Mapping) else None
        if not isinstance(prompt, Mapping):
            return {"cancelled": True}
        kind = prompt.get("type")
        message = str(prompt.get("message") or "")
        if kind == "select":
            options = [o for o in prompt.get("options") or () if isinstance(o, Mapping)]
            listing = "".join(f"\n  {i + 1}. {o.get('label')}" for i, o in enumerate(options))
            line = ((await reader.read(f"{message}{listing}\nchoice [1]: ")) or "").strip() or "1"
            if line.isdigit() and 0 < int(line) <= len(options):
                return {"value": str(options[int(line) - 1].get("id"))}
            return {"cancelled": True}
        if kind == "secret":
            import asyncio

            value = await asyncio.get_running_loop().run_in_executor(None, getpass.getpass, f"{message}: ")
            return {"value": value} if value.strip() else {"cancelled": True}
        hint = f" [{prompt['placeholder']}]" if kind == "text" and prompt.get("placeholder") else ""
        typed = await reader.read(f"{message}{hint} ")
        if typed is None:
            return {"cancelled": True}
        return {"value": typed.strip()}

    return answer


def unattended_handler() -> Callable[[Any], Awaitable[dict[str, Any]]]:
    """``rpcctl login`` with no terminal: nothing can be asked, but what needs no answer still
    works — a device code (shown on stderr), a browser's loopback redirect (the pasted-code
    question is left open until the redirect withdraws it); any other question is declined."""

    async def answer(params: Any) -> dict[str, Any]:
        prompt = params.get("prompt") if isinstance(params, Mapping) else None
        if isinstance(prompt, Mapping) and prompt.get("type") == "manual_code":
            import asyncio

            await asyncio.Event().wait()  # withdrawn by the daemon when the redirect arrives
        return {"cancelled": True}

    return answer


def providers_table(result: Mapping[str, Any]) -> str:
    from rpcd.clients.render import table

    rows = []
    for p in result.get("providers") or ():
        how = "/".join(x for x, on in (("oauth", p.get("oauth")), ("api key", p.get("apiKey"))) if on)
        rows.append((p.get("id"), p.get("name"), how, p.get("stored") or "-"))
    return table(("provider", "name", "login", "stored"), rows)


# -- the chat's /login and /logout (joined to the table by ``chat.EXTRA_COMMAND_MODULES``) ----------


@slash.command("login", "[PROVIDER] [--api-key]",
               "log in as Pi's /login does (no PROVIDER: the list; --api-key: store a key instead)")
async def _login(chat: slash.ChatContext, rest: str) -> None:
    words = rest.split()
    provider = next((w for w in words if not w.startswith("--")), "")
    if not provider:
        chat.printer.result(await chat.client.list_auth_providers(), providers_table)
        return
    done = await chat.client.login(provider, method="api_key" if "--api-key" in words else "oauth")
    chat.printer.result(done, lambda r: f"logged in to {r['provider']} ({r['type']}); its models are usable now")


@slash.command("logout", "PROVIDER", "remove a provider's stored credential")
async def _logout(chat: slash.ChatContext, rest: str) -> None:
    if not rest.strip():
        raise slash.UsageProblem("usage: /logout PROVIDER")
    gone = await chat.client.logout(rest.strip())
    chat.printer.result(gone, lambda r: f"logged out of {r['provider']}" if r["removed"]
                        else f"nothing stored for {r['provider']}")

