#!/usr/bin/env python3
"""How many of the built-in catalog's models rpcd can serve: ``getAvailableModels`` of a real daemon
whose environment holds a credential for every provider.

A temporary agent dir holds an ``auth.json`` with the logins a provider has no key for (OpenAI Codex,
Radius: OAuth only) and the environment gets every variable of ``catalog.json``'s credential table,
AWS access keys, a Google Cloud API key and Cloudflare's key, account and gateway ids — dummy values:
nothing is sent anywhere (listing models makes no request). The daemon is ``python -P -m rpcd`` from
this checkout, or from ``--tree DIR`` (another checkout: how many an older rpcd served).

Prints the usable count out of the catalog's models, then per provider and per API what is not
usable (``--json``: the same as one JSON object).

Usage: ``python scripts/usable_models.py [--tree DIR] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FAR_FUTURE_MS = 4102444800000  # 2100-01-01: a login that needs no refresh while listing

EXTRA_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEEXAMPLE00", "AWS_SECRET_ACCESS_KEY": "example-secret-access-key-000000",
    "AWS_REGION": "us-east-1", "GOOGLE_CLOUD_API_KEY": "AQ.example-vertex-key-000000",
    "CLOUDFLARE_API_KEY": "example-cloudflare-key-000000", "CLOUDFLARE_ACCOUNT_ID": "0123456789abcdef",
    "CLOUDFLARE_GATEWAY_ID": "example-gateway",
}


def catalog() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((ROOT / "rpcd" / "providers" / "catalog.json").read_text())
    return loaded


def environment(agent: Path, home: Path, tree: Path | None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent),
           "RPCD_LOG_LEVEL": "error"}
    for provider in catalog()["providers"]:
        for name, _kind in provider["auth"]["env"]:
            env[name] = f"example-{name.lower()}-000000"
    env.update(EXTRA_ENV)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def logins() -> dict[str, Any]:
    """An OAuth login for each provider that takes no key (its models need one)."""
    stored: dict[str, Any] = {}
    for provider in catalog()["providers"]:
        auth = provider["auth"]
        if auth["oauth"] and not auth["apiKey"]:
            stored[provider["id"]] = {"type": "oauth", "access": "example-access-000000",
                                      "refresh": "example-refresh-000000", "expires": FAR_FUTURE_MS}
    return stored


async def available(tree: Path | None) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from rpcd.clients.client import RpcdClient

    with tempfile.TemporaryDirectory(prefix="rpcd-usable-") as scratch:
        agent, home, cwd = Path(scratch, "agent"), Path(scratch, "home"), Path(scratch, "project")
        for directory in (agent, home, cwd):
            directory.mkdir()
        (agent / "auth.json").write_text(json.dumps(logins()))
        os.chmod(agent / "auth.json", 0o600)
        client = await RpcdClient.spawn([], cwd=cwd, env=environment(agent, home, tree), request_timeout=60.0)
        try:
            result = await client.get_available_models()
        finally:
            await client.close()
    return [dict(model) for model in result["models"]]


def report(models: list[dict[str, Any]]) -> dict[str, Any]:
    usable = {(m["provider"], m["id"]) for m in models}
    total = 0
    unusable_by_provider: collections.Counter[str] = collections.Counter()
    unusable_by_api: collections.Counter[str] = collections.Counter()
    for provider in catalog()["providers"]:
        for model in provider["models"]:
            total += 1
            if (provider["id"], model["id"]) not in usable:
                unusable_by_provider[provider["id"]] += 1
                unusable_by_api[model["api"]] += 1
    count = total - sum(unusable_by_provider.values())
    return {"catalog": total, "usable": count, "unusable": total - count,
            "unusableByProvider": dict(unusable_by_provider.most_common()),
            "unusableByApi": dict(unusable_by_api.most_common())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, help="run the daemon of another rpcd checkout")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    summary = report(asyncio.run(available(args.tree)))
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"usable: {summary['usable']} of {summary['catalog']} catalog models ({summary['unusable']} not usable)")
    for label, key in (("provider", "unusableByProvider"), ("api", "unusableByApi")):
        for name, count in summary[key].items():
            print(f"  not usable, {label} {name}: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
