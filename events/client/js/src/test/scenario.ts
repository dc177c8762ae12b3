// One task through the interceptor, as the @a2a-js/sdk client drives it
// (before, then after per result; failed where the SDK throws). The Go
// test test/tsclient_test.go runs the same task through the Go interceptor
// (a2aemitv2) and compares what both publish.
//
//   node dist/test/scenario.js NATS_URL SOURCE CARD_JSON
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientCallContext } from '@a2a-js/sdk/client';
import { JsonRpcTaskNotCancelableError, JsonRpcTaskNotFoundError } from '@a2a-js/sdk/errors';
import { lifecycleInterceptor, withPlan } from '../index.js';

const [servers, source, cardJSON] = process.argv.slice(2);
const T = 'cmp-task-1';
const lc = lifecycleInterceptor({
  servers, source, card: JSON.parse(cardJSON), cardUrl: 'http://agent.example:9999/.well-known/agent-card.json',
  traceContext: () => ({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'vendor=1' }),
});
const agentCard = { capabilities: { streaming: true }, supportedInterfaces: [{ url: 'http://agent.example:9999/a2a/jsonrpc', protocolBinding: 'JSONRPC' }] };
const plan = { skillId: 'summarize', requires: { outputModes: ['text/plain'] }, posture: 'degrade' as const, idempotent: true };

async function call(method: string, value: unknown, results: unknown[], err?: unknown): Promise<void> {
  const options = { context: ClientCallContext.create(withPlan(plan)) };
  await lc.before({ input: { method, value }, agentCard, options } as never);
  for (const r of results) await lc.after({ result: { method, value: r }, agentCard, options } as never);
  if (err) lc.failed(err, { method, taskId: (value as any).id ?? (value as any).message?.taskId ?? '' });
}

const part = (content: unknown, mediaType = '') => ({ content, mediaType, filename: '', metadata: undefined });
const text = (s: string) => part({ $case: 'text', value: s });
const message = (taskId: string, ...parts: unknown[]) => ({ message: { messageId: 'm', contextId: '', taskId, role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [] }, configuration: undefined, metadata: undefined, tenant: '' });
const status = (state: TaskState, skillId?: string) => ({ state, timestamp: undefined, message: skillId ? { metadata: { skillId } } : undefined });
const task = (state: TaskState, artifacts: unknown[] = []) => ({ id: T, contextId: '', status: status(state), artifacts, history: [], metadata: undefined });
const artifact = (id: string, ...parts: unknown[]) => ({ artifactId: id, name: '', description: '', parts, metadata: undefined, extensions: [] });
const ev = ($case: string, value: unknown) => ({ payload: { $case, value } });
const statusUpdate = (state: TaskState, skillId?: string) => ev('statusUpdate', { taskId: T, contextId: '', status: status(state, skillId), metadata: undefined });
const artifactUpdate = (a: unknown) => ev('artifactUpdate', { taskId: T, contextId: '', artifact: a, append: false, lastChunk: true, metadata: undefined });

await call('sendMessageStream', message('', text('hi'), part({ $case: 'raw', value: Buffer.from('%PDF') }, 'application/pdf')), [
  ev('task', task(TaskState.TASK_STATE_SUBMITTED)),
  statusUpdate(TaskState.TASK_STATE_WORKING, 'summarize'),
  artifactUpdate(artifact('a1', text('total'), part({ $case: 'data', value: { total: 42 } }))),
  artifactUpdate(artifact('a1', text('again'))), // no new media type: nothing
  statusUpdate(TaskState.TASK_STATE_WORKING), // no change: nothing
]);
await call('getTask', { id: T, tenant: '' }, [], new JsonRpcTaskNotFoundError({ message: 'no task cmp-task-1' }));
await call('getTask', { id: T, tenant: '' }, [task(TaskState.TASK_STATE_INPUT_REQUIRED, [artifact('a2', part({ $case: 'url', value: 'https://x/y.png' }, 'image/png'))])]);
await call('sendMessage', message(T, text('fr')), [], new Error('connection reset')); // a transport failure: counted, not published
await call('sendMessage', message(T, text('fr')), [task(TaskState.TASK_STATE_WORKING)]);
await call('resubscribeTask', { id: T, tenant: '' }, [statusUpdate(TaskState.TASK_STATE_WORKING), artifactUpdate(artifact('a3', part({ $case: 'data', value: {} })))]);
await call('cancelTask', { id: T, tenant: '', metadata: undefined }, [], new JsonRpcTaskNotCancelableError({ message: 'busy' }));
await call('cancelTask', { id: T, tenant: '', metadata: undefined }, [task(TaskState.TASK_STATE_CANCELED)]);
await lc.close();
if (lc.dropped > 0 || lc.tasks !== 0) throw new Error(`dropped ${lc.dropped}, remembers ${lc.tasks} tasks`);
console.log(JSON.stringify({ published: lc.published }));
