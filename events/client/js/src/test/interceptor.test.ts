// The interceptor against a real nats-server: the scenario the Go
// comparison test runs (scenario.ts), every event it publishes checked
// against the schemas; the bounded buffer; the package's exports as a
// consumer imports them.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { decode, lifecycleInterceptor } from '../index.js';
import { freePort, startNats, stopAll } from './harness.js';
import { validate } from './schemas.js';

const pkgRoot = resolve(import.meta.dirname, '../..');
let natsUrl: string;
let nc: NatsConnection;

before(async () => {
  natsUrl = await startNats();
  nc = await connect({ servers: natsUrl });
  await (await jetstreamManager(nc)).streams.add({ name: 'A2A_TASKS', subjects: ['a2a.task.>'] });
});

after(async () => {
  await nc?.close();
  await stopAll();
});

test('one task: the events, in order, each valid against its schema', async () => {
  const got: string[] = [];
  const sub = nc.subscribe('a2a.task.>');
  const reading = (async () => {
    for await (const m of sub) {
      const e = decode<any>(m.headers, m.data);
      validate(e.type, e.data);
      assert.equal(m.headers?.get('Nats-Msg-Id'), `urn:client:scenario/${e.id}`);
      const d = e.data;
      got.push([e.type.slice('a2a.task.'.length), d.method, d.attempt, d.state, d.artifactId, d.mediaTypes?.join('+'), d.code].filter((x) => x !== undefined).join(' '));
      if (d.state === 'TASK_STATE_CANCELED') break;
    }
  })();
  await nc.flush();
  execFileSync(process.execPath, [join(pkgRoot, 'dist/test/scenario.js'), natsUrl, 'urn:client:scenario', '{"name":"agent"}']);
  await reading;
  assert.deepEqual(got, [
    'submitted',
    'request SendStreamingMessage 1',
    'status TASK_STATE_SUBMITTED',
    'status TASK_STATE_WORKING',
    'artifact a1 text/plain+application/json',
    'request GetTask 1',
    'error GetTask -32001',
    'request GetTask 2',
    'artifact a2 image/png',
    'status TASK_STATE_INPUT_REQUIRED',
    'request SendMessage 1',
    'request SendMessage 2',
    'status TASK_STATE_WORKING',
    'request SubscribeToTask 1',
    'artifact a3 application/json',
    'request CancelTask 1',
    'error CancelTask -32002',
    'request CancelTask 2',
    'status TASK_STATE_CANCELED',
  ]);
});

test('a full buffer drops and counts, and never throws at the call', async () => {
  const warnings: string[] = [];
  const lc = lifecycleInterceptor({ servers: `nats://127.0.0.1:${await freePort()}`, source: 'urn:client:full', maxPending: 2, logger: { warn: (m) => warnings.push(m) } });
  const agentCard = { capabilities: {}, supportedInterfaces: [{ url: 'https://agent.example/a2a' }] } as never;
  for (let i = 0; i < 5; i++) await lc.before({ input: { method: 'getTask', value: { id: `t${i}` } }, agentCard, options: {} } as never);
  assert.equal(lc.dropped, 3);
  assert.match(warnings[0], /buffer full/);
  await lc.close();
  assert.equal(lc.dropped, 5, 'the two buffered ones found no server');
});

test('a consumer imports lifecycleInterceptor and watchDrift from @carddrift/a2a', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carddrift-consumer-'));
  mkdirSync(join(dir, 'node_modules', '@carddrift'), { recursive: true });
  symlinkSync(pkgRoot, join(dir, 'node_modules', '@carddrift', 'a2a'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  const out = execFileSync(process.execPath, ['-e', 'import("@carddrift/a2a").then((m) => console.log(typeof m.lifecycleInterceptor, typeof m.watchDrift))'], { cwd: dir }).toString();
  assert.equal(out.trim(), 'function function');
});
