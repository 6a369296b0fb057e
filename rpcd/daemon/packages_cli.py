"""``rpcd packages list|install|remove``: Pi packages as ``pi list|install|remove`` manages them — Pi's
own package manager, run in the Node extension host (npm packages under ``<agentDir>/npm/``, with
``-l`` the project's ``.pi/npm/``; the ``npmCommand`` setting honoured; the ``packages`` setting of
the global or the project ``settings.json`` updated). A session started afterwards loads what they
bring. ``-l`` needs a trusted project (a saved decision in ``<agentDir>/trust.json``, or
``--approve``), as in Pi. Exit status 0: done; 1: failed, with the reason on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from rpcd.runtime.extensions.node.locate import NodeUnavailable
from rpcd.runtime.extensions.node.service import running_node_host
from rpcd.runtime.resources.trust import TrustStore
from rpcd.sessions.extension_host import PACKAGES_BUDGET_S, npm_command_setting
from rpcd.store.paths import get_agent_dir

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rpcd packages", description="Pi packages (as pi install/remove/list).")
    parser.add_argument("--agent-dir", help="Pi's agent dir (default: $PI_CODING_AGENT_DIR or ~/.pi/agent)")
    parser.add_argument("--cwd", help="the project (default: the current directory)")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    parser.add_argument("--approve", action="store_true", help="trust the project for this command (-l)")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="the configured packages, user and project")
    for name, what in (("install", "install a package and add it to the settings"),
                       ("remove", "remove a package and take it out of the settings")):
        sub = actions.add_parser(name, help=what)
        sub.add_argument("source", metavar="SOURCE", help="npm:name[@version], git:host/path[@ref], a URL or a path")
        sub.add_argument("-l", "--local", action="store_true", help="the project's packages (.pi/settings.json)")
    return parser


def main(argv: Sequence[str]) -> int:
    ns = _parser().parse_args(list(argv))
    agent_dir = os.path.abspath(os.path.expanduser(ns.agent_dir)) if ns.agent_dir else get_agent_dir()
    cwd = os.path.abspath(os.path.expanduser(ns.cwd)) if ns.cwd else os.getcwd()
    trusted = bool(ns.approve or TrustStore(agent_dir).lookup(cwd))
    if getattr(ns, "local", False) and not trusted:
        print("rpcd packages: the project is not trusted; use --approve (or rpcctl trust add) to change its "
              "packages", file=sys.stderr)
        return 1
    params: dict[str, Any] = {"cwd": cwd, "agentDir": agent_dir, "projectTrusted": trusted}
    if ns.action != "list":
        params.update(source=ns.source, local=ns.local)
    try:
        answer = anyio.run(_call, ns.action, params, agent_dir, cwd)
    except NodeUnavailable as exc:
        print(f"rpcd packages {ns.action}: {exc.reason}", file=sys.stderr)
        return 1
    if ns.json:
        print(json.dumps(answer, indent=2))
    elif ns.action == "list":
        _print_list(answer.get("packages") or [])
    elif ns.action == "install":
        print(f"Installed {ns.source}")
    elif answer.get("removed"):
        print(f"Removed {ns.source}")
    else:
        print(f"No matching package found for {ns.source}", file=sys.stderr)
        return 1
    return 0


async def _call(action: str, params: dict[str, Any], agent_dir: str, cwd: str) -> Any:
    npm = npm_command_setting(agent_dir)
    async with running_node_host(agent_dir=agent_dir, cwd=cwd, npm_command=lambda: npm) as host:
        return await host.request(f"packages.{action}", params, budget=PACKAGES_BUDGET_S)


def _print_list(packages: list[dict[str, Any]]) -> None:
    if not packages:
        print("No packages installed.")
        return
    for scope, title in (("user", "User packages:"), ("project", "Project packages:")):
        chosen = [p for p in packages if p.get("scope") == scope]
        if not chosen:
            continue
        print(title)
        for package in chosen:
            print(f"  {package['source']}{' (filtered)' if package.get('filtered') else ''}")
            if package.get("installedPath"):
                print(f"    {package['installedPath']}")
