"""``rpcd extensions setup [--agent-dir DIR] [--offline]``: make the TypeScript/JavaScript extension
host ready ahead of time — find the Node that will run it (``$RPCD_NODE`` or ``node`` on ``PATH``,
>= 22.19) and install its pinned packages (``npm ci`` from the lockfile inside rpcd, with the
``npmCommand`` setting of the agent dir when there is one) into the cache; say what was done.
After it, no session has to wait for (or reach) the npm registry. Exit status 0: ready; 1: not,
with the reason and what to do on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rpcd.runtime.extensions.node.locate import NodeUnavailable, ensure_host_packages, find_node
from rpcd.sessions.extension_host import npm_command_setting
from rpcd.store.paths import get_agent_dir

__all__ = ["main"]


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="rpcd extensions setup",
                                     description="Install the TypeScript/JavaScript extension host's Node packages.")
    parser.add_argument("--agent-dir", help="Pi's agent dir, for its npmCommand setting "
                                            "(default: $PI_CODING_AGENT_DIR or ~/.pi/agent)")
    parser.add_argument("--offline", action="store_true", help="install from npm's cache only (no network)")
    ns = parser.parse_args(list(argv))
    agent_dir = os.path.abspath(os.path.expanduser(ns.agent_dir)) if ns.agent_dir else get_agent_dir()
    try:
        node = find_node()
        install = ensure_host_packages(npm_command_setting(agent_dir), env=dict(os.environ), offline=ns.offline)
    except NodeUnavailable as exc:
        print(f"rpcd extensions setup: {exc.reason}", file=sys.stderr)
        return 1
    done = f"installed (npm ci, {install.seconds:.1f} s)" if install.installed_now else "already installed"
    print(f"Node: {node.path} ({node.version})")
    print(f"Extension host packages: {done} in {install.directory}")
    return 0
