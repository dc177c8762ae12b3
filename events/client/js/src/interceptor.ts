// lifecycleInterceptor: the @a2a-js/sdk CallInterceptor that publishes the
// task lifecycle as the Go interceptors do (events/client/internal/track and
// events/client/a2aemitv2 in the Go module): the same events, in the same
// cases, with the same data.
import { AgentCard, TaskState } from '@a2a-js/sdk';
import { ClientCallContextKey, type AfterArgs, type BeforeArgs, type CallInterceptor, type ClientCallContext, type ContextUpdate } from '@a2a-js/sdk/client';
import { A2AError, isJsonRpcError, toJsonRpcError } from '@a2a-js/sdk/errors';
import { newEvent, type TraceContext } from './cloudevent.js';
import { Outbox, type OutboxOptions } from './outbox.js';
import { lifecycleSubject } from './subjects.js';
import type { Lifecycle, LifecycleType, Posture, Requires } from './types.js';

/** What the client planned a task for, beyond what the call shows. */
export interface Plan {
  skillId: string;
  requires?: Requires;
  posture?: Posture;
  idempotent?: boolean;
}

export interface InterceptorOptions extends OutboxOptions {
  /** CloudEvents source naming the client, e.g. "urn:client:planner-7". */
  source: string;
  /** agentUrl of every event. Default: scheme and host of the card's first interface URL. */
  agentUrl?: string;
  /** URL the card was read from (default: carddrift resolves the well-known URL). */
  cardUrl?: string;
  /**
   * The card the task is planned against, as submitted: "client" (default)
   * sends the card the SDK client holds, as JSON (pin source client-card);
   * an object sends that card (the body as served, say); "none" sends no
   * card (carddrift pins what it fetches first). cardDigest, when set,
   * is sent instead of any card (pin source client-digest).
   */
  card?: 'client' | 'none' | Record<string, unknown>;
  cardDigest?: string;
  /** The plan of tasks whose call carries none (withPlan). */
  plan?: Plan;
  /** The trace context of a call that carries none (withTraceContext), e.g. from OpenTelemetry. */
  traceContext?: () => TraceContext | undefined;
  /** Tasks remembered (default 10,000); past it the oldest is forgotten. */
  maxTasks?: number;
  /** Receives events refused before publishing (a submitted task without a skill). Default: logger.warn. */
  onError?: (err: Error) => void;
}

/** The interceptor, with its outbox's counters and close. */
export interface LifecycleInterceptor extends CallInterceptor {
  /** Events dropped so far: full buffer, NATS unreachable, failed publish. */
  readonly dropped: number;
  /** Events the stream acknowledged so far. */
  readonly published: number;
  /** Tasks remembered. */
  readonly tasks: number;
  /**
   * failed records a call that threw (the SDK calls no interceptor then):
   * the next call of the method on the task is a retry, and an error with
   * an A2A code is published as a2a.task.error.
   */
  failed(err: unknown, call: { method: string; taskId: string; trace?: TraceContext }): void;
  /** flush resolves once everything queued is published or dropped. */
  flush(): Promise<void>;
  /** close flushes and closes the connection the interceptor opened. */
  close(): Promise<void>;
}

const planKey = new ClientCallContextKey<Plan>('carddrift plan');
const traceKey = new ClientCallContextKey<TraceContext>('carddrift trace context');

/** withPlan attaches the plan of the task a send creates: `{ context: ClientCallContext.create(withPlan(p)) }`. */
export const withPlan = (p: Plan): ContextUpdate => planKey.set(p);
/** withTraceContext attaches the W3C trace context the call's events carry. */
export const withTraceContext = (t: TraceContext): ContextUpdate => traceKey.set(t);

// A2A v1.0 method names (what @a2a-js/sdk 1.3 sends), as a2aemitv2 names them.
const wireNames: Record<string, string> = {
  sendMessage: 'SendMessage', sendMessageStream: 'SendStreamingMessage', getTask: 'GetTask', listTasks: 'ListTasks',
  cancelTask: 'CancelTask', resubscribeTask: 'SubscribeToTask', createTaskPushNotificationConfig: 'CreateTaskPushNotificationConfig',
  getTaskPushNotificationConfig: 'GetTaskPushNotificationConfig', listTaskPushNotificationConfig: 'ListTaskPushNotificationConfigs',
  deleteTaskPushNotificationConfig: 'DeleteTaskPushNotificationConfig', getAgentCard: 'GetExtendedAgentCard',
};

// A streaming send to an agent whose card declares no streaming is sent as SendMessage by the SDK.
function wireMethod(method: string, card?: { capabilities?: { streaming?: boolean } }): string {
  if (method === 'sendMessageStream' && card && !card.capabilities?.streaming) return 'SendMessage';
  return wireNames[method] ?? method;
}

const terminal = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_CANCELED', 'TASK_STATE_FAILED', 'TASK_STATE_REJECTED']);
const MAX_MESSAGE_BYTES = 1024;

interface Call {
  method: string;
  agentUrl: string;
  taskId: string;
  newTask: boolean;
  streams: boolean;
  push: boolean;
  inputModes: string[];
  card?: Record<string, unknown>;
  plan?: Plan;
  trace?: TraceContext;
  announced: boolean;
  succeeded: boolean;
}

// What the interceptor remembers of a task.
interface Remembered {
  state?: string;
  artifacts: Map<string, Set<string>>;
  failures: Map<string, number>;
  methods: Map<string, string>; // SDK method → wire name last used (for failed)
  agentUrl: string;
}

interface Part { content?: { $case: string }; mediaType?: string }
interface Shown { taskId: string; state?: string; skillId?: string; artifacts: { id: string; mediaTypes: string[] }[] }

/** mediaTypes: each part's mediaType, else text/plain, application/json or application/octet-stream; once each. */
export function mediaTypes(parts: Part[] | undefined): string[] {
  const out: string[] = [];
  for (const p of parts ?? []) {
    if (!p?.content) continue;
    const mt = p.mediaType || { text: 'text/plain', data: 'application/json' }[p.content.$case] || 'application/octet-stream';
    if (!out.includes(mt)) out.push(mt);
  }
  return out;
}

/**
 * fetchCard reads an agent's card as served (A2A-Version 1.0, the
 * well-known path), for options.card and ClientFactory.createFromAgentCard:
 * the card the SDK's own resolver holds is not always the served one (it
 * re-parses some forms, and the digests then differ).
 */
export async function fetchCard(agentUrl: string, timeoutMs = 10_000): Promise<{ card: Record<string, unknown>; cardUrl: string }> {
  const cardUrl = new URL('/.well-known/agent-card.json', agentUrl).href;
  const res = await fetch(cardUrl, { headers: { 'A2A-Version': '1.0' }, signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`carddrift: card ${cardUrl}: HTTP ${res.status}`);
  return { card: (await res.json()) as Record<string, unknown>, cardUrl };
}

/** lifecycleInterceptor returns the CallInterceptor for ClientFactory's clientConfig.interceptors. */
export function lifecycleInterceptor(opts: InterceptorOptions): LifecycleInterceptor {
  const outbox = new Outbox(opts);
  const maxTasks = opts.maxTasks && opts.maxTasks > 0 ? opts.maxTasks : 10_000;
  const tasks = new Map<string, Remembered>(); // insertion order: oldest first
  const calls = new WeakMap<object, Call>(); // by the call's RequestOptions, which before and after share
  const onError = opts.onError ?? ((err: Error) => (opts.logger ?? console).warn(err.message));

  function state(taskId: string): Remembered {
    let s = tasks.get(taskId);
    if (s) return s;
    while (tasks.size >= maxTasks) tasks.delete(tasks.keys().next().value!);
    s = { artifacts: new Map(), failures: new Map(), methods: new Map(), agentUrl: opts.agentUrl ?? '' };
    tasks.set(taskId, s);
    return s;
  }

  function emit<K extends LifecycleType>(type: K, data: Lifecycle[K], trace?: TraceContext): void {
    try {
      outbox.add(lifecycleSubject(type, data.taskId), newEvent(type, opts.source, data.taskId, data, trace));
    } catch (err) {
      onError(err as Error);
    }
  }

  function agentUrl(card: any): string {
    if (opts.agentUrl) return opts.agentUrl;
    const base: string = card?.supportedInterfaces?.[0]?.url ?? card?.url ?? '';
    const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:[^/?#@]*@)?([^/?#]*)/.exec(base);
    return m ? `${m[1].toLowerCase()}://${m[2]}` : base;
  }

  function clientCard(card: any): Record<string, unknown> | undefined {
    if (opts.card === 'none') return undefined;
    if (opts.card && opts.card !== 'client') return opts.card;
    if (!card) return undefined;
    // The SDK holds a card it parsed as its model (oneofs as $case) or as served.
    return JSON.stringify(card.securitySchemes ?? {}).includes('"$case"') ? (AgentCard.toJSON(card) as Record<string, unknown>) : card;
  }

  function submit(c: Call): void {
    const p = c.plan ?? { skillId: '' };
    if (!p.skillId) {
      onError(new Error(`carddrift: task ${c.taskId}: no skillId in its plan (withPlan or options.plan); a2a.task.submitted not sent`));
    } else {
      const req = { ...p.requires };
      req.streaming = !!(req.streaming || c.streams);
      req.pushNotifications = !!(req.pushNotifications || c.push);
      req.inputModes = [...(req.inputModes ?? [])];
      for (const m of c.inputModes) if (!req.inputModes.includes(m)) req.inputModes.push(m);
      const data: Lifecycle['a2a.task.submitted'] = { taskId: c.taskId, agentUrl: c.agentUrl, skillId: p.skillId };
      const requires = wireRequires(req);
      if (requires) data.requires = requires;
      data.posture = p.posture ?? 'fail-closed';
      data.idempotent = !!p.idempotent;
      if (opts.cardDigest) data.cardDigest = opts.cardDigest;
      else if (c.card) data.card = c.card;
      if (opts.cardUrl) data.cardUrl = opts.cardUrl;
      emit('a2a.task.submitted', data, c.trace);
    }
    state(c.taskId);
    emit('a2a.task.request', { taskId: c.taskId, agentUrl: c.agentUrl, method: c.method, attempt: 1 }, c.trace);
  }

  function observe(c: Call, r: Shown): void {
    if (c.newTask && !c.announced && r.taskId) {
      c.taskId = r.taskId;
      c.announced = true;
      submit(c);
    }
    if (c.taskId && !c.succeeded) {
      c.succeeded = true;
      tasks.get(c.taskId)?.failures.delete(c.method);
    }
    const taskId = r.taskId || c.taskId;
    if (!taskId) return;
    for (const a of r.artifacts) {
      // Artifacts first: a terminal status forgets the task.
      const s = state(taskId);
      let seen = s.artifacts.get(a.id);
      if (!seen) s.artifacts.set(a.id, (seen = new Set()));
      const fresh = a.mediaTypes.filter((m) => !seen.has(m));
      fresh.forEach((m) => seen.add(m));
      if (fresh.length > 0) emit('a2a.task.artifact', { taskId, agentUrl: c.agentUrl, artifactId: a.id, mediaTypes: a.mediaTypes }, c.trace);
    }
    if (r.state) {
      const s = state(taskId);
      const changed = s.state !== r.state;
      s.state = r.state;
      if (terminal.has(r.state)) tasks.delete(taskId);
      if (changed) {
        const d: Lifecycle['a2a.task.status'] = { taskId, agentUrl: c.agentUrl, state: r.state };
        if (r.skillId) d.skillId = r.skillId;
        emit('a2a.task.status', d, c.trace);
      }
    }
  }

  return {
    async before(args: BeforeArgs): Promise<void> {
      const input = args.input as { method: string; value?: any };
      const v = input.value;
      const ctx = args.options?.context as ClientCallContext | undefined;
      const c: Call = {
        method: wireMethod(input.method, args.agentCard), agentUrl: agentUrl(args.agentCard), taskId: '',
        newTask: false, streams: false, push: false, inputModes: [], announced: false, succeeded: false,
        trace: (ctx && traceKey.get(ctx)) ?? opts.traceContext?.(),
      };
      if (input.method === 'sendMessage' || input.method === 'sendMessageStream') {
        if (v?.message) {
          c.taskId = v.message.taskId ?? '';
          if (!c.taskId) {
            c.newTask = true;
            c.streams = c.method === 'SendStreamingMessage';
            c.push = !!v.configuration?.taskPushNotificationConfig;
            c.inputModes = mediaTypes(v.message.parts);
            c.plan = (ctx && planKey.get(ctx)) ?? opts.plan;
            c.card = clientCard(args.agentCard);
          }
        }
      } else if (v && typeof v === 'object') {
        c.taskId = (input.method.includes('PushNotification') ? v.taskId : v.id) ?? '';
      }
      if (c.taskId && !c.newTask) {
        const s = state(c.taskId);
        s.methods.set(input.method, c.method);
        s.agentUrl = c.agentUrl;
        emit('a2a.task.request', { taskId: c.taskId, agentUrl: c.agentUrl, method: c.method, attempt: (s.failures.get(c.method) ?? 0) + 1 }, c.trace);
      }
      if (args.options) calls.set(args.options, c);
    },

    async after(args: AfterArgs): Promise<void> {
      const c = args.options && calls.get(args.options);
      if (!c) return; // before did not run (another interceptor answered first)
      try {
        observe(c, shown(args.result?.method, args.result?.value));
      } catch (err) {
        onError(err as Error);
      }
    },

    failed(err: unknown, call: { method: string; taskId: string; trace?: TraceContext }): void {
      if (!call.taskId) return; // a new task's failure: there is no task
      const s = state(call.taskId);
      const method = s.methods.get(call.method) ?? wireMethod(call.method);
      s.failures.set(method, (s.failures.get(method) ?? 0) + 1);
      const code = errorCode(err);
      if (code === undefined) return; // a transport failure: nothing to tell
      const message = Buffer.from(String((err as Error)?.message ?? err)).subarray(0, MAX_MESSAGE_BYTES).toString();
      emit('a2a.task.error', { taskId: call.taskId, agentUrl: s.agentUrl, method, code, message }, call.trace ?? opts.traceContext?.());
    },

    get dropped() { return outbox.dropped; },
    get published() { return outbox.published; },
    get tasks() { return tasks.size; },
    flush: () => outbox.flush(),
    close: () => outbox.close(),
  };
}

// wireRequires is Requires as the Go emitter writes it: absent when nothing
// is required; streaming and pushNotifications always with the rest.
function wireRequires(r: Requires): Requires | undefined {
  const out: Requires = { streaming: !!r.streaming, pushNotifications: !!r.pushNotifications };
  for (const k of ['inputModes', 'outputModes', 'security', 'extensions'] as const) if (r[k]?.length) out[k] = r[k];
  if (r.scopes) out.scopes = Object.fromEntries(Object.entries(r.scopes).map(([k, v]) => [k, v ?? []]));
  if (r.extendedCard) out.extendedCard = true;
  return Object.keys(out).length > 2 || out.streaming || out.pushNotifications ? out : undefined;
}

// shown is what a result (a task, a message, a stream event) shows of its task.
function shown(method: string | undefined, value: any): Shown {
  const r: Shown = { taskId: '', artifacts: [] };
  let p: { $case?: string; value?: any } | undefined;
  switch (method) {
    case 'sendMessageStream': case 'resubscribeTask': p = value?.payload; break;
    case 'sendMessage': p = { $case: value && 'messageId' in value ? 'message' : 'task', value }; break;
    case 'getTask': case 'cancelTask': p = { $case: 'task', value }; break;
  }
  const v = p?.value;
  if (!v || typeof v !== 'object') return r;
  const status = (st: any) => {
    const name = typeof st?.state === 'number' ? TaskState[st.state] : st?.state;
    if (!name || name === 'TASK_STATE_UNSPECIFIED') return;
    r.state = name;
    const skill = st.message?.metadata?.skillId;
    if (typeof skill === 'string') r.skillId = skill;
  };
  const artifact = (a: any) => a && r.artifacts.push({ id: a.artifactId ?? '', mediaTypes: mediaTypes(a.parts) });
  switch (p?.$case) {
    case 'task':
      r.taskId = v.id;
      status(v.status);
      (v.artifacts ?? []).forEach(artifact);
      break;
    case 'message':
      r.taskId = v.taskId ?? '';
      break;
    case 'statusUpdate':
      r.taskId = v.taskId;
      status(v.status);
      break;
    case 'artifactUpdate':
      r.taskId = v.taskId;
      artifact(v.artifact);
      break;
  }
  return r;
}

// errorCode: the JSON-RPC code of an A2A error, undefined for a transport failure.
function errorCode(err: unknown): number | undefined {
  if (isJsonRpcError(err)) return err.envelopeCode;
  if (err instanceof A2AError) return toJsonRpcError(err).code;
  return undefined;
}
