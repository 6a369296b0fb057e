"""``rpcd login PROVIDER [--api-key]`` (also ``rpcd acp --login PROVIDER``: what an ACP client runs in a
terminal for rpcd's ``terminal`` auth methods): a login at the terminal, without a daemon — the same
flows as the ``login`` method (``rpcd.providers.logins``), the person's part on stdin/stderr: the URL to
open (opened in a browser when one can be), the device code, the questions (a key read without echo).
Stores the credential in ``<agentDir>/auth.json`` (shared with Pi) and exits 0; a declined question
exits 1, a failed login 2, with one line saying why.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

EXIT_OK = 0
EXIT_CANCELLED = 1
EXIT_FAILED = 2


class TerminalInteraction:
    def __init__(self, *, open_browser: bool = True) -> None:
        self._open_browser = open_browser

    def notify(self, notice: Mapping[str, Any]) -> None:
        kind = notice.get("type")
        if kind == "auth_url":
            _say(f"Open this URL to log in:\n  {notice.get('url')}")
            if notice.get("instructions"):
                _say(str(notice["instructions"]))
            self._browse(str(notice.get("url") or ""))
        elif kind == "device_code":
            _say(f"Go to {notice.get('verificationUri')} and enter the code: {notice.get('userCode')}")
            self._browse(str(notice.get("verificationUri") or ""))
        elif notice.get("message"):
            _say(str(notice["message"]))

    def _browse(self, url: str) -> None:
        if not self._open_browser or not url:
            return
        import contextlib
        import webbrowser

        with contextlib.suppress(Exception):
            webbrowser.open(url, new=2)

    async def prompt(self, prompt: Mapping[str, Any]) -> str:
        import anyio

        from rpcd.providers.oauth import LoginCancelled

        kind = prompt.get("type")
        message = str(prompt.get("message") or "")
        if kind == "select":
            options = [o for o in prompt.get("options") or () if isinstance(o, Mapping)]
            listing = "".join(f"\n  {i + 1}. {o.get('label')}" for i, o in enumerate(options))
            line = (await anyio.to_thread.run_sync(_read, f"{message}{listing}\nchoice [1]: ",
                                                   abandon_on_cancel=True) or "").strip() or "1"
            if line.isdigit() and 0 < int(line) <= len(options):
                return str(options[int(line) - 1].get("id"))
            raise LoginCancelled(f"no such choice: {line}")
        if kind == "secret":
            value = await anyio.to_thread.run_sync(getpass.getpass, f"{message}: ", abandon_on_cancel=True)
            if not value.strip():
                raise LoginCancelled("no key entered")
            return str(value)
        hint = f" [{prompt['placeholder']}]" if kind == "text" and prompt.get("placeholder") else ""
        # a pasted-code question races the browser's redirect: when the redirect wins, this read is
        # abandoned (the line the person may still type is never used)
        typed: str | None = await anyio.to_thread.run_sync(_read, f"{message}{hint} ", abandon_on_cancel=True)
        if typed is None:
            raise LoginCancelled("end of input")
        return typed.strip()


def _say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _read(question: str) -> str | None:
    sys.stderr.write(question)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rpcd login", description="Log in to a provider as Pi's /login does; "
                                     "the credential is stored in <agentDir>/auth.json (shared with Pi).")
    parser.add_argument("provider", metavar="PROVIDER", nargs="?",
                        help="a provider id (none: list the providers and what is stored for each)")
    parser.add_argument("--api-key", action="store_true", help="store an API key instead of a subscription login")
    parser.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")
    parser.add_argument("--agent-dir", metavar="DIR", help="the agent dir (default: $PI_CODING_AGENT_DIR, else "
                                                           "~/.pi/agent)")
    known, _others = parser.parse_known_args(list(argv))  # ``rpcd acp``'s own flags may come along
    return known


def main(argv: Sequence[str] | None = None) -> int:
    import anyio

    args = parse(sys.argv[2:] if argv is None else argv)
    agent_dir = os.path.expanduser(args.agent_dir or os.environ.get("PI_CODING_AGENT_DIR") or "~/.pi/agent")
    from rpcd.providers.credentials import AUTH_FILE, LoginError
    from rpcd.providers.logins import logins_for
    from rpcd.providers.oauth import LoginCancelled, OAuthError

    logins = logins_for(os.path.join(agent_dir, AUTH_FILE))
    if args.provider is None:
        for provider in logins.providers():
            how = "/".join(x for x, on in (("oauth", provider.oauth), ("api key", provider.api_key)) if on)
            sys.stdout.write(f"{provider.id:28} {how:16} {provider.stored or '-'}\n")
        return EXIT_OK
    known = {p.id: p for p in logins.providers()}
    method = "api_key" if args.api_key else "oauth"
    info = known.get(args.provider)
    if info is None or not (info.api_key if args.api_key else info.oauth):
        _say(f"rpcd login: {args.provider!r} has no {'stored API key' if args.api_key else 'OAuth login'} "
             "(`rpcd login` lists the providers)")
        return EXIT_FAILED
    interaction = TerminalInteraction(open_browser=not args.no_browser)
    try:
        stored = anyio.run(logins.login, args.provider, interaction, method)
    except LoginCancelled as exc:
        _say(f"rpcd login: cancelled ({exc})")
        return EXIT_CANCELLED
    except (OAuthError, LoginError) as exc:
        _say(f"rpcd login: {args.provider}: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _say("rpcd login: interrupted")
        return EXIT_CANCELLED
    _say(f"Logged in to {info.name} ({stored.get('type')}), stored in {os.path.join(agent_dir, AUTH_FILE)}")
    return EXIT_OK
