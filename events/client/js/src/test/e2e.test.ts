// End to end: nats-server, `carddrift serve`, an @a2a-js/sdk agent and
// client, the interceptor and watchDrift, all real.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { ClientCallContext, ClientFactory, ClientFactoryOptions, type Client } from '@a2a-js/sdk/client';
import { Role } from '@a2a-js/sdk';
import { decode, DriftAborts, fetchCard, lifecycleInterceptor, watchDrift, withPlan, withTraceContext, type DriftEvent, type LifecycleInterceptor } from '../index.js';
import { Agent, freePort, startNats, startServe, stopAll, until } from './harness.js';
import { validate } from './schemas.js';

let natsUrl: string;
let nc: NatsConnection;
let agent: Agent;
const seen: { subject: string; msg: Msg }[] = []; // every a2a.task.* and card.* message
let cardDigest = ''; // the digest of the agent's card before it changes

before(async () => {
  natsUrl = await startNats();
  nc = await connect({ servers: natsUrl });
  for (const subject of ['a2a.task.>', 'card.>']) nc.subscribe(subject, { callback: (_, msg) => { seen.push({ subject: msg.subject, msg }); } });
  await startServe(natsUrl, nc);
  agent = new Agent();
  await agent.start();
});

after(async () => {
  await agent?.stop();
  await nc?.close();
  await stopAll();
});

// A card served with max-age 0 is leased for serve's --min-lease (1 s): the
// next event after that revalidates it.
const leaseExpiry = () => new Promise((r) => setTimeout(r, 1100));

const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

async function client(lc: LifecycleInterceptor): Promise<Client> {
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { clientConfig: { interceptors: [lc] } }));
  return factory.createFromUrl(agent.base);
}

const message = (text: string) => ({
  message: { messageId: crypto.randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }], metadata: undefined, extensions: [], referenceTaskIds: [] },
  configuration: undefined, metadata: undefined, tenant: '',
});

/** A streaming task, read in the background: its id once known, its end (an error when aborted). */
function startStream(c: Client, signal: AbortSignal) {
  let resolveId!: (id: string) => void;
  const id = new Promise<string>((r) => (resolveId = r));
  const opts = { signal, context: ClientCallContext.create(withPlan({ skillId: 'summarize' }), withTraceContext({ traceparent })) };
  const done = (async () => {
    for await (const ev of c.sendMessageStream(message('summarise') as never, opts)) {
      const p = (ev as any).payload;
      if (p?.$case === 'task') resolveId(p.value.id);
    }
  })();
  return { id, done };
}

const cardEvents = (type: string, taskId?: string) => seen
  .filter((s) => s.subject.startsWith(type + '.'))
  .map((s) => decode<any>(s.msg.headers, s.msg.data))
  .filter((e) => taskId === undefined || e.data.taskId === taskId);

test('a card that turns streaming off mid-task aborts the stream through card.drift', async () => {
  const lc = lifecycleInterceptor({ servers: natsUrl, source: 'urn:client:js-e2e' });
  const drifts: { ev: DriftEvent; at: number }[] = [];
  const aborts = new DriftAborts();
  const watch = await watchDrift({ servers: natsUrl, durable: 'js-e2e', agent: agent.base }, (ev) => {
    drifts.push({ ev, at: Date.now() });
    aborts.handle(ev);
  });
  const ac = new AbortController();
  const c = await client(lc);
  const stream = startStream(c, ac.signal);
  const taskId = await stream.id;
  aborts.link(taskId, ac);

  // The pin is the client's card, and it is the card carddrift reads live.
  const pinned = await until('card.pinned', async () => cardEvents('card.pinned', taskId)[0]);
  assert.equal(pinned.data.source, 'client-card');
  assert.equal(pinned.traceparent, traceparent);
  const observed = await until('card.observed', async () => cardEvents('card.observed').at(-1));
  assert.equal(pinned.data.digest, observed.data.digest, 'the client card digests as the served one');
  cardDigest = pinned.data.digest;
  assert.equal(drifts.length, 0);

  (agent.card.capabilities as any).streaming = false;
  await leaseExpiry();
  agent.step(taskId, 'artifact');
  if (process.env.CARDDRIFT_JS_DEBUG) setTimeout(() => console.error(seen.map((s) => s.subject + ' ' + Buffer.from(s.msg.data).toString().slice(0, 300)).join('\n')), 15000).unref();
  const ended = await stream.done.then(() => undefined, (err) => ({ err, at: Date.now() }));
  assert.ok(ended, 'the stream was aborted');
  assert.equal(ended.err.name, 'AbortError');
  const d = drifts[0].ev;
  assert.equal(d.drift.taskId, taskId);
  assert.equal(d.drift.verdict.action, 'abort');
  assert.ok(d.drift.findings.some((f) => f.rule === 'streaming-disabled' && f.touches));
  assert.equal(d.cloudEvent.traceparent, traceparent, 'the verdict carries the client trace');
  validate('card.drift', d.drift);
  const published = Date.parse(d.cloudEvent.time!);
  console.log(`drift published → stream aborted: ${ended.at - published} ms (handler ran ${drifts[0].at - published} ms after publication)`);

  await lc.close();
  await watch.stop();
  agent.step(taskId, 'complete');

  // Every event the interceptor published conforms to the contract.
  const ours = seen.filter((s) => s.subject.startsWith('a2a.task.'));
  assert.deepEqual([...new Set(ours.map((s) => s.subject.split('.')[2]))].sort(), ['artifact', 'request', 'status', 'submitted']);
  for (const { subject, msg } of ours) {
    const e = decode<any>(msg.headers, msg.data);
    validate(e.type, e.data);
    assert.equal(subject, `${e.type}.${e.data.taskId}`);
    assert.equal(e.subject, e.data.taskId);
    assert.equal(e.dataschema, `https://carddrift.dev/schemas/${e.type}/v1.json`);
    assert.equal(msg.headers!.get('Nats-Msg-Id'), `urn:client:js-e2e/${e.id}`);
    assert.equal(e.traceparent, traceparent);
  }
  assert.equal(lc.dropped, 0);
});

test('a client that knows only its card\'s digest pins it; a restarted durable planner (now filtered to the task) gets the drift published while it was down, again after a failed handler', async () => {
  (agent.card.capabilities as any).streaming = true;
  const first = await watchDrift({ servers: natsUrl, durable: 'js-restart' }, () => assert.fail('no drift yet'));
  await first.stop();

  const lc = lifecycleInterceptor({ servers: natsUrl, source: 'urn:client:js-restart', cardDigest });
  const c = await client(lc);
  const stream = startStream(c, new AbortController().signal);
  const taskId = await stream.id;
  const pinned = await until('card.pinned', async () => cardEvents('card.pinned', taskId)[0]);
  assert.equal(pinned.data.source, 'client-digest');
  assert.equal(pinned.data.digest, cardDigest);
  (agent.card.capabilities as any).streaming = false;
  await leaseExpiry();
  agent.step(taskId, 'artifact');
  await until('card.drift', async () => cardEvents('card.drift', taskId)[0]);
  agent.step(taskId, 'complete');
  await stream.done;

  const deliveries: number[] = [];
  let resolve!: (ev: DriftEvent) => void;
  const got = new Promise<DriftEvent>((r) => (resolve = r));
  const second = await watchDrift({ servers: natsUrl, durable: 'js-restart', task: taskId, nakDelayMs: 50, onError: () => {} }, (ev) => {
    deliveries.push(ev.delivery);
    if (ev.delivery === 1) throw new Error('planner busy'); // NAKed: redelivered
    resolve(ev);
  });
  const ev = await got;
  await second.stop();
  assert.equal(ev.drift.taskId, taskId);
  assert.deepEqual(deliveries, [1, 2]);
  await lc.close();
});

test('with NATS down the A2A call works and the interceptor counts what it dropped', async () => {
  (agent.card.capabilities as any).streaming = true;
  const warnings: string[] = [];
  const { card, cardUrl } = await fetchCard(agent.base); // the card as served, for the client and the pin
  assert.equal(cardUrl, `${agent.base}/.well-known/agent-card.json`);
  const lc = lifecycleInterceptor({ servers: `nats://127.0.0.1:${await freePort()}`, source: 'urn:client:js-down', card, cardUrl, logger: { warn: (m) => warnings.push(m) } });
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { clientConfig: { interceptors: [lc] } }));
  const c = await factory.createFromAgentCard(card as never);
  const stream = startStream(c, new AbortController().signal);
  const taskId = await stream.id;
  agent.step(taskId, 'artifact');
  agent.step(taskId, 'complete');
  await stream.done;
  await lc.close();
  assert.ok(lc.dropped >= 4, `dropped ${lc.dropped}`);
  assert.equal(lc.published, 0);
  assert.match(warnings[0], /dropped \d+ lifecycle event\(s\).*NATS unreachable/);
});
