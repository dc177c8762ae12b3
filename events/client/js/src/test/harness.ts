// Real parts for the tests: nats-server (on PATH or $CARDDRIFT_NATS_SERVER_BIN),
// `carddrift serve` built from this repository, and an @a2a-js/sdk agent.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, existsSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import express from 'express';
import { AGENT_CARD_PATH, A2A_PROTOCOL_VERSION, Role, TaskState, type AgentCard } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

export const repoRoot = resolve(import.meta.dirname, '../../../../..');

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const p = join(dir, name);
    if (dir && existsSync(p)) return p;
  }
}

export function natsServerBin(): string {
  const bin = onPath('nats-server') ?? process.env.CARDDRIFT_NATS_SERVER_BIN;
  if (!bin) throw new Error('nats-server not found: put it on PATH or set CARDDRIFT_NATS_SERVER_BIN');
  return bin;
}

const dirs: string[] = []; // removed by stopAll
function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

let carddrift: string | undefined;
/** carddriftBin builds cmd/carddrift from the repository, once. */
export function carddriftBin(): string {
  carddrift ??= process.env.CARDDRIFT_BIN;
  if (!carddrift) {
    carddrift = join(tempDir('carddrift-js-'), 'carddrift');
    execFileSync('go', ['build', '-o', carddrift, './cmd/carddrift'], { cwd: repoRoot, stdio: 'inherit' });
  }
  return carddrift;
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

const children: ChildProcess[] = [];
/** stopAll ends the processes the harness started. */
export async function stopAll(): Promise<void> {
  await Promise.all(children.splice(0).map((c) => new Promise<void>((r) => {
    if (c.exitCode !== null) return r();
    c.once('exit', () => r());
    c.kill('SIGTERM');
  })));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

function start(bin: string, args: string[], name: string): ChildProcess {
  const c = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  c.stderr!.on('data', (b) => (tail = (tail + b).slice(-4000)));
  c.on('exit', (code) => code && code !== 143 && console.error(`${name} exited ${code}: ${tail}`));
  children.push(c);
  return c;
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  if (process.env.CARDDRIFT_JS_DEBUG) console.error(`waiting for ${what}`);
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** startNats runs a JetStream nats-server and returns its URL. */
export async function startNats(): Promise<string> {
  const port = await freePort();
  start(natsServerBin(), ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', tempDir('nats-js-')], 'nats-server');
  const url = `nats://127.0.0.1:${port}`;
  await until('nats-server', async () => (await connect({ servers: url })).close().then(() => true));
  return url;
}

/** startServe runs `carddrift serve` against natsUrl and waits for its streams. */
export async function startServe(natsUrl: string, nc: NatsConnection): Promise<void> {
  start(carddriftBin(), ['serve', '--nats-url', natsUrl, '--fetch-allow', '127.0.0.0/8', '--http-addr', '', '--name', 'js-e2e', '--log-format', 'json', '--storage', 'memory'], 'carddrift serve');
  const jsm = await jetstreamManager(nc);
  await until('carddrift serve streams', async () => (await jsm.streams.info('CARD_EVENTS')) && (await jsm.streams.info('A2A_TASKS')) && true);
  // Its workers pull once their consumers exist.
  await until('carddrift serve consumers', async () => ((await jsm.consumers.list('A2A_TASKS').next()).length > 0 ? true : undefined));
}

/**
 * An @a2a-js/sdk agent whose card the test changes in place (served with
 * max-age 0, so carddrift revalidates at each event). Each task runs until
 * the test steps it: "artifact" sends an artifact, "complete" ends it.
 */
export class Agent {
  card: AgentCard;
  base = '';
  private server?: Server;
  private steps = new Map<string, ((s: string) => void)[]>();
  private pending = new Map<string, string[]>();

  constructor() {
    this.card = {
      name: 'Ledger Clerk', description: 'Summarises invoices.', supportedInterfaces: [], version: '1.0.0',
      provider: { organization: 'Carddrift JS', url: 'https://example.com/carddrift-js' }, documentationUrl: '',
      capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
      securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
      skills: [{ id: 'summarize', name: 'Summarise', description: 'A short summary.', tags: ['invoice'], examples: [], inputModes: ['text/plain'], outputModes: ['text/plain'], securityRequirements: [] }],
      signatures: [], iconUrl: '',
    } as unknown as AgentCard;
  }

  /** step sends the task a step (queued until it waits for one). */
  step(taskId: string, s: 'artifact' | 'complete'): void {
    const w = this.steps.get(taskId)?.shift();
    if (w) w(s);
    else this.pending.set(taskId, [...(this.pending.get(taskId) ?? []), s]);
  }

  private next(taskId: string): Promise<string> {
    const p = this.pending.get(taskId)?.shift();
    if (p) return Promise.resolve(p);
    return new Promise((r) => this.steps.set(taskId, [...(this.steps.get(taskId) ?? []), r]));
  }

  async start(): Promise<void> {
    const agent = this;
    const executor = {
      async execute(ctx: RequestContext, bus: ExecutionEventBus) {
        const { taskId, contextId } = ctx;
        const status = (state: TaskState) => ({ state, timestamp: new Date().toISOString(), message: undefined });
        bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [], metadata: undefined }));
        bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_WORKING), metadata: undefined }));
        for (let n = 1; ; n++) {
          if ((await agent.next(taskId)) === 'complete') break;
          bus.publish(AgentEvent.artifactUpdate({
            taskId, contextId, append: false, lastChunk: true, metadata: undefined,
            artifact: { artifactId: `a${n}`, name: '', description: '', metadata: undefined, extensions: [], parts: [{ content: { $case: 'text', value: 'total 42' }, metadata: undefined, filename: '', mediaType: '' }] },
          } as never));
        }
        bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined }));
        bus.finished();
      },
      async cancelTask() {},
    };
    const handler = new DefaultRequestHandler(this.card, new InMemoryTaskStore(), executor);
    const app = express();
    app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler, cache: { maxAge: 0 } } as never));
    app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
    this.server = createServer(app);
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    this.card.supportedInterfaces = [{ url: `${this.base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }];
  }

  async stop(): Promise<void> {
    for (const [id] of this.steps) while (this.steps.get(id)?.length) this.step(id, 'complete');
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

export { until };
