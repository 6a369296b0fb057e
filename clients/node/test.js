'use strict';
// initialize -> newSession -> prompt (streamed notifications) -> fork -> dispose, against the real daemon.
// The daemon command comes from RPCD_DAEMON_CMD (the pytest wrapper passes <repo>/.venv/bin/python -m rpcd).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnDaemon, daemonCommandFromEnv, DaemonExitedError } = require('./rpcdClient');

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
  const answer = await client.prompt('hello from node');
  assert.equal(answer.stopReason, 'stop');
  assert.equal(answer.text, 'echo: hello from node'); // what the turn's events said, as in Python
  assert.equal(answer.isError, false);
  assert.equal(answer.sessionId, created.sessionId);
  assert.ok(answer.sessionFile.endsWith(`_${created.sessionId}.jsonl`), answer.sessionFile);
  assert.ok(answer.usage.totalTokens > 0);
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

test('a daemon that cannot start rejects at once, saying why', async () => {
  const started = Date.now();
  await assert.rejects(spawnDaemon({ command: ['/nonexistent/rpcd-daemon'] }), (error) => {
    assert.ok(error instanceof DaemonExitedError, String(error));
    assert.match(error.message, /cannot start the daemon \(\/nonexistent\/rpcd-daemon\): .*ENOENT/);
    return true;
  });
  assert.ok(Date.now() - started < 10000);
});

test('a daemon that exits at once rejects with its exit status and stderr, no uncaught EPIPE', async () => {
  const python = daemonCommandFromEnv()[0];
  const dies = [python, '-c', 'import sys; sys.stderr.write("boom: no config\\n"); sys.exit(3)'];
  const started = Date.now();
  await assert.rejects(spawnDaemon({ command: dies }), (error) => {
    assert.ok(error instanceof DaemonExitedError, String(error));
    assert.equal(error.exitCode, 3);
    assert.deepEqual(error.stderrTail, ['boom: no config']);
    assert.match(error.message, /exited \(exit status 3\) before answering initialize/);
    return true;
  });
  assert.ok(Date.now() - started < 10000, 'not the 60 s request timeout');
  // a daemon that dies while a request waits: the request rejects, the process lives on
  const client = await spawnDaemon({ command: daemonCommandFromEnv(), args: ['--in-memory'] });
  client.child.kill('SIGKILL');
  await assert.rejects(client.request('getState', {}), DaemonExitedError);
  await assert.rejects(client.request('getState', {}), /exited \(signal SIGKILL\)/);
  await client.close();
});
