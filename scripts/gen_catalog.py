#!/usr/bin/env python3
"""Regenerate rpcd's built-in model catalog from the installed Pi 0.85.0 package.

Pi's ``pi-ai`` ships its providers and models as code (``providers/all.js``, one
``*.models.js`` per provider) and its credential rules as closures
(``auth.apiKey.resolve``). This script runs Node from the Pi oracle install
(``tests/pi_compat/oracle.py``), asks those objects directly and writes the answer as
data: ``rpcd/providers/catalog.json``.

* models: every built-in provider's ``getModels()``, exactly as Pi holds them (ids, names,
  APIs, base URLs, context windows, max tokens, reasoning + ``thinkingLevelMap``, input
  types, costs, compat, headers);
* credentials: each provider's ``auth.apiKey.resolve`` is probed with a fake environment
  (which variables it reads, in order, and whether a value becomes the API key or an
  ``Authorization: Bearer`` header); a provider whose resolution needs more than one
  variable (AWS, Vertex ADC, Cloudflare account ids) is marked ``custom``;
* ``defaultModelPerProvider`` from pi-coding-agent's model resolver (initial model choice), as
  ``[provider, modelId]`` pairs in Pi's order (the order is the preference).

Usage: ``python scripts/gen_catalog.py [--check]`` (``--check`` fails when the committed
file differs from what the installed Pi produces).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "rpcd" / "runtime" / "providers" / "catalog.json"

PROBE = r"""
import * as all from "@earendil-works/pi-ai/providers/all";
import { defaultModelPerProvider } from "__RESOLVER__";
const signal = new AbortController().signal;
const ctx = (lookup) => ({ env: async (name) => lookup(name), fileExists: async () => false });
async function probe(auth) {
  if (!auth) return { env: [], custom: false };
  const asked = [];
  await auth.resolve({ ctx: ctx((n) => { asked.push(n); return undefined; }), credential: undefined, signal });
  const env = [];
  let custom = false;
  for (const name of asked) {
    const only = ctx((n) => (n === name ? "VALUE" : undefined));
    const got = await auth.resolve({ ctx: only, credential: undefined, signal });
    if (got?.auth?.apiKey === "VALUE" && !got.auth.headers) env.push([name, "apiKey"]);
    else if (got?.auth?.headers?.Authorization === "Bearer VALUE" && !got.auth.apiKey) env.push([name, "bearer"]);
    else custom = true;
  }
  let stored = false;
  try {
    const stored_ = { type: "api_key", key: "STORED" };
    const got = await auth.resolve({ ctx: ctx(() => undefined), credential: stored_, signal });
    stored = got?.auth?.apiKey === "STORED";
  } catch {}
  return { env, custom, stored };
}
const providers = [];
for (const provider of all.builtinProviders()) {
  const auth = await probe(provider.auth.apiKey);
  providers.push({
    id: provider.id,
    name: provider.name,
    ...(provider.baseUrl ? { baseUrl: provider.baseUrl } : {}),
    auth: { apiKey: !!provider.auth.apiKey, oauth: !!provider.auth.oauth, ...auth },
    models: provider.getModels(),
  });
}
process.stdout.write(JSON.stringify({
  piVersion: "__VERSION__",
  generatedAt: new Date(all.getBuiltinModelDataGeneratedAt()).toISOString(),
  defaultModelPerProvider: Object.entries(defaultModelPerProvider),
  providers,
}));
"""


def generate() -> str:
    sys.path.insert(0, str(ROOT))
    from tests.pi_compat.oracle import PI_VERSION, ensure_oracle

    oracle = ensure_oracle()
    resolver = oracle.root / "node_modules/@earendil-works/pi-coding-agent/dist/core/model-resolver.js"
    script = PROBE.replace("__RESOLVER__", resolver.as_uri()).replace("__VERSION__", PI_VERSION)
    with tempfile.NamedTemporaryFile("w", suffix=".mjs", dir=oracle.root, delete=False) as handle:
        handle.write(script)
        path = Path(handle.name)
    try:
        done = subprocess.run(
            [str(oracle.node), str(path)], cwd=oracle.root, capture_output=True, text=True, timeout=120,
            env={"PATH": "/usr/bin:/bin", "PI_OFFLINE": "1", "PI_TELEMETRY": "0", "HOME": str(oracle.root)},
            check=False,
        )
    finally:
        path.unlink()
    if done.returncode != 0:
        raise SystemExit(f"catalog probe failed: {done.stderr.strip()[-2000:]}")
    data = json.loads(done.stdout)
    # one provider per line: small diffs when Pi updates a provider, still compact
    lines = [json.dumps({k: v for k, v in data.items() if k != "providers"}, ensure_ascii=False)[:-1]]
    lines[0] += ', "providers": ['
    entries = [json.dumps(p, ensure_ascii=False, separators=(",", ":")) for p in data["providers"]]
    return lines[0] + "\n" + ",\n".join(entries) + "\n]}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed catalog is not current")
    args = parser.parse_args()
    text = generate()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is not what Pi produces: run scripts/gen_catalog.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    count = sum(len(p["models"]) for p in json.loads(text)["providers"])
    print(f"wrote {TARGET.relative_to(ROOT)}: {count} models")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
