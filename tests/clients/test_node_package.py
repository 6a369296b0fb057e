"""The Node client as an npm package: ``npm pack`` of ``clients/node``, installed into a fresh project
(its ``vscode-jsonrpc`` dependency comes from the registry, as for any user), ``require('rpcd-client')``
run against the real daemon, and its type declarations checked by ``tsc`` against a TypeScript user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.clients.conftest import REPO, daemon_python, needs_daemon

NODE_DIR = REPO / "clients" / "node"

USER_JS = """
const assert = require('node:assert');
const { spawnDaemon, daemonCommandFromEnv, PROTOCOL_VERSION } = require('rpcd-client');

(async () => {
  const client = await spawnDaemon({ command: daemonCommandFromEnv(), args: ['--in-memory'] });
  const types = [];
  client.onSessionEvent((params) => types.push(params.event.type));
  assert.strictEqual(PROTOCOL_VERSION, 1);
  assert.ok(client.server.capabilities.methods.includes('prompt'));
  const result = await client.request('prompt', { text: 'from npm' });
  assert.deepStrictEqual(result, { stopReason: 'stop' });
  assert.ok(types.includes('agent_end'), types.join(','));
  const exit = await client.close();
  assert.strictEqual(exit.code, 0);
  console.log('ran against the daemon');
})().catch((error) => { console.error(error); process.exit(1); });
"""

USER_MJS = """
import { spawnDaemon, daemonCommandFromEnv, DaemonExitedError } from 'rpcd-client';

const client = await spawnDaemon({ command: daemonCommandFromEnv(), args: ['--in-memory'] });
const reply = await client.prompt('from esm');
if (reply.isError || typeof DaemonExitedError !== 'function') process.exit(1);
console.log(`esm: ${reply.text}`);
await client.close();
"""

USER_TS = """
import { spawnDaemon, RpcdClient, SessionNotificationParams, GetStateResult, PromptOutcome } from 'rpcd-client';

async function main(): Promise<void> {
  const client: RpcdClient = await spawnDaemon({ args: ['--in-memory'], handlers: {} });
  client.onSessionEvent((params: SessionNotificationParams, method) => {
    const kind: string = params.event.type;
    const which: 'session/event' | 'session/lifecycle' = method;
    void kind; void which;
  });
  const state = await client.request<{ sessionId: string }>('getState', {}, { timeoutMs: 5000 });
  const id: string = state.sessionId;
  // typed from the OpenRPC document: params and results of each method
  const typed: GetStateResult = await client.request('getState');
  const level: string = typed.thinkingLevel;
  const created = await client.request('newSession', { cwd: '/tmp' });
  const generation: number = created.generation;
  // @ts-expect-error: setModel takes {provider, modelId}
  await client.request('setModel', { model: 'x' });
  const reply: PromptOutcome = await client.prompt('hi');
  const failed: boolean | undefined = reply.isError;
  void id; void level; void generation; void failed;
  const exit = await client.close({ graceMs: 1000 });
  const code: number | null = exit.code;
  void code;
}
void main;
"""


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout}\n{done.stderr}"
    return done


def test_the_node_types_are_generated_from_the_current_openrpc_document() -> None:
    from rpcd.clients import node_types

    assert node_types.main(["--check"]) == 0, "run: python -m rpcd.clients.node_types --write"


@pytest.mark.node
@needs_daemon
def test_npm_pack_install_into_a_project_and_run_against_the_daemon(tmp_path: Path) -> None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm not installed (apt install nodejs npm)")
    packed = _run([npm, "pack", str(NODE_DIR), "--pack-destination", str(tmp_path), "--json"], tmp_path)
    [info] = json.loads(packed.stdout)
    assert {f["path"] for f in info["files"]} == {"package.json", "rpcdClient.js", "index.mjs", "index.d.ts",
                                                  "methods.d.ts", "README.md"}
    project = tmp_path / "editor-extension"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "editor-extension", "version": "1.0.0",
                                                      "private": True}))
    _run([npm, "install", "--no-audit", "--no-fund", "--prefer-offline", str(tmp_path / info["filename"]),
          "typescript@5", "@types/node@20"], project)
    (project / "user.js").write_text(USER_JS)
    env = {**os.environ, "RPCD_DAEMON_CMD": json.dumps([daemon_python(), "-P", "-m", "rpcd"]),
           "PYTHONPATH": str(REPO)}
    ran = _run([node, "user.js"], project, env=env)
    assert "ran against the daemon" in ran.stdout
    (project / "user.mjs").write_text(USER_MJS)  # the README's way: an ES module with top-level await
    ran = _run([node, "user.mjs"], project, env=env)
    assert "esm: echo: from esm" in ran.stdout
    (project / "user.ts").write_text(USER_TS)
    _run([node, str(project / "node_modules" / "typescript" / "bin" / "tsc"), "--noEmit", "--strict",
          "--module", "commonjs", "--moduleResolution", "node", "--types", "node",
          # a Node user's libraries, not the browser's: lib.dom.d.ts was most of tsc's 15 s
          "--target", "es2022", "--lib", "es2022", "user.ts"], project)
