'use strict';
// initialize -> newSession -> prompt (streamed notifications) -> fork -> dispose, against the real daemon.
// The daemon command comes from RPCD_DAEMON_CMD (the pytest wrapper passes <repo>/.venv/bin/python -m rpcd).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnDaemon, daemonCommandFromEnv } = require('./rpcdClient');

test('initialize, newSession, streamed prompt, fork, dispose over Content-Length framing', async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rpcd-node-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const agentDir = path.join(root, 'agent');
  const project = path.join(root, 'project');
  fs.mkdirSync(agentDir);
  fs.mkdirSync(project);
  const env = { ...process.env, PI_CODING_AGENT_DIR: agentDir };
  delete env.RPCD_FAUX_SCRIPT;

  const client = await spawnDaemon({
    command: daemonCommandFromEnv(),
    args: ['--agent-dir', agentDir, '--cwd', project],
    cwd: project,
    env,
  });
  t.after(() => client.close());
  assert.equal(client.server.protocolVersion, 1);
  assert.ok(client.server.capabilities.methods.includes('newSession'));

  const created = await client.request('newSession', {});
  assert.equal(created.cancelled, false);
  assert.equal(typeof created.sessionId, 'string');

  const events = [];
  let text = '';
  const turnOver = new Promise((resolve) => {
    client.onSessionEvent((params, method) => {
      events.push({ method, params });
      const event = params.event ?? {};
      const delta = event.assistantMessageEvent;
      if (event.type === 'message_update' && delta?.type === 'text_delta') text += delta.delta;
      if (event.type === 'agent_end') resolve();
    });
  });
  const answer = await client.request('prompt', { text: 'hello from node' });
  assert.equal(typeof answer.stopReason, 'string');
  await turnOver;
  assert.ok(text.length > 0, 'assistant text streamed as deltas');
  assert.ok(events.every((e) => e.params.generation === created.generation));
  const seqs = events.map((e) => e.params.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'seq increases');

  const tree = await client.request('getTree', {});
  const user = tree.entries.find((e) => e.type === 'message' && e.message?.role === 'user');
  assert.ok(user, 'the prompt is in the tree');
  const forked = await client.request('fork', { entryId: user.id });
  assert.equal(forked.cancelled, false);
  assert.equal(forked.selectedText, 'hello from node');
  assert.ok(forked.generation > created.generation);
  assert.equal(client.generation, forked.generation);

  assert.equal(await client.request('dispose', {}), null);
  const exit = await client.close();
  assert.equal(exit.code, 0, `daemon stderr:\n${client.stderrLines.join('\n')}`);
});
