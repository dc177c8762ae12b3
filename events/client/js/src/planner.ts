// watchDrift: a planner's consumer of card.drift, as the Go planner
// (events/client/planner) consumes it: a pull consumer on the card stream,
// explicit acks, NAK with a growing delay when the handler fails.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type ConsumerConfig, type JsMsg } from '@nats-io/jetstream';
import type { CloudEvent } from 'cloudevents';
import { decode } from './cloudevent.js';
import { driftFilter } from './subjects.js';
import type { Action, Drift } from './types.js';

/** One card.drift verdict, as the handler receives it. */
export interface DriftEvent {
  /** The verdict's data: task, cards, findings, verdict. */
  drift: Drift;
  /** The CloudEvent it came in (id, source, time, traceparent, ...). */
  cloudEvent: CloudEvent<Drift>;
  /** This delivery's number (1 = first) and the stream sequence. */
  delivery: number;
  sequence: number;
}

export interface WatchOptions {
  /** A connection the caller owns; or servers, for one watchDrift opens (and stop closes). */
  connection?: NatsConnection;
  servers?: string | string[];
  /** Durable consumer name: a restarted planner resumes where it left off. Absent: an ephemeral consumer. */
  durable?: string;
  /** Only this agent's verdicts (any URL of its host), only this task's, or both. */
  agent?: string;
  task?: string;
  /** Only verdicts with these actions (the others are acknowledged unseen). */
  actions?: Action[];
  /** The card events stream (default CARD_EVENTS). */
  stream?: string;
  /** A new consumer starts at the beginning of the stream (default: new verdicts only). */
  fromStart?: boolean;
  /** Redelivery after this long unacknowledged (default 30,000 ms); deliveries in all (default 10). */
  ackWaitMs?: number;
  maxDeliver?: number;
  /** NAK delay after a failed delivery, doubled each time up to maxNakDelayMs (defaults 1,000 and 60,000 ms). */
  nakDelayMs?: number;
  maxNakDelayMs?: number;
  /** Messages pulled ahead (default 16). */
  buffer?: number;
  /** Receives undecodable messages and handler errors. */
  onError?: (err: Error) => void;
}

export type DriftHandler = (event: DriftEvent) => unknown | Promise<unknown>;

export interface DriftWatch {
  /** The consumer's name (the durable, or the server-assigned one). */
  readonly consumer: string;
  /** stop pulls no more, lets the running handler settle (and acks or NAKs it), NAKs what was buffered. */
  stop(): Promise<void>;
}

/**
 * watchDrift hands every card.drift verdict to handler, one at a time, in
 * stream order: acknowledged once its promise resolves, NAKed for
 * redelivery (after nakDelayMs, growing) if it throws or rejects. The
 * stream must exist (`carddrift serve` creates it).
 */
export async function watchDrift(opts: WatchOptions, handler: DriftHandler): Promise<DriftWatch> {
  if (!opts.connection && !opts.servers) throw new Error('carddrift: give a NATS connection or servers');
  const nc = opts.connection ?? (await connect({ servers: opts.servers }));
  const stream = opts.stream ?? 'CARD_EVENTS';
  const ackWait = opts.ackWaitMs ?? 30_000;
  const nakDelay = (n: number) => Math.min((opts.nakDelayMs ?? 1000) * 2 ** (n - 1), opts.maxNakDelayMs ?? 60_000);
  const report = opts.onError ?? ((err: Error) => console.warn(err.message));
  const config: Partial<ConsumerConfig> = {
    description: 'carddrift planner: card.drift verdicts',
    filter_subject: driftFilter(opts.agent, opts.task),
    ack_policy: AckPolicy.Explicit,
    ack_wait: ackWait * 1e6,
    max_deliver: opts.maxDeliver ?? 10,
    max_ack_pending: Math.max((opts.buffer ?? 16) * 4, 64),
  };
  const jsm = await jetstreamManager(nc);
  let name: string;
  if (opts.durable) {
    name = opts.durable;
    const exists = await jsm.consumers.info(stream, name).then(() => true, () => false);
    if (exists) await jsm.consumers.update(stream, name, config);
    else await jsm.consumers.add(stream, { ...config, durable_name: name, deliver_policy: opts.fromStart ? DeliverPolicy.All : DeliverPolicy.New });
  } else {
    const info = await jsm.consumers.add(stream, { ...config, deliver_policy: opts.fromStart ? DeliverPolicy.All : DeliverPolicy.New, inactive_threshold: 60_000 * 1e6 });
    name = info.name;
  }
  const consumer = await jetstream(nc).consumers.get(stream, name);
  const messages = await consumer.consume({ max_messages: opts.buffer ?? 16 });
  let stopped = false;

  async function deliver(m: JsMsg): Promise<void> {
    let ev: DriftEvent;
    try {
      const ce = decode<Drift>(m.headers, m.data);
      if (ce.type !== 'card.drift') throw new Error(`${ce.type} is not card.drift`);
      ev = { drift: ce.data as Drift, cloudEvent: ce, delivery: m.info.deliveryCount, sequence: m.seq };
    } catch (err) {
      report(new Error(`carddrift: terminating undecodable verdict on ${m.subject}: ${(err as Error).message}`));
      m.term('undecodable');
      return;
    }
    if (opts.actions && !opts.actions.includes(ev.drift.verdict?.action)) {
      m.ack();
      return;
    }
    const ticker = setInterval(() => m.working(), Math.max(ackWait / 3, 10));
    try {
      await handler(ev);
      m.ack();
    } catch (err) {
      report(err instanceof Error ? err : new Error(String(err)));
      m.nak(nakDelay(ev.delivery));
    } finally {
      clearInterval(ticker);
    }
  }

  const loop = (async () => {
    for await (const m of messages) {
      if (stopped) m.nak(); // for another instance of the durable, at once
      else await deliver(m);
    }
  })();

  return {
    consumer: name,
    async stop() {
      stopped = true;
      messages.stop();
      await loop;
      if (!opts.connection) await nc.drain();
    },
  };
}

/** DriftAbortError is the reason of a signal an abort verdict fired. */
export class DriftAbortError extends Error {
  constructor(readonly event: DriftEvent) {
    super(`carddrift: abort task ${event.drift.taskId}: ${event.drift.verdict.reason}`);
    this.name = 'AbortError';
  }
}

/**
 * DriftAborts turns abort verdicts into AbortSignals, by task: give
 * handle to watchDrift (or call it from your handler) and signal(taskId), or
 * link(taskId, controller) once a stream names its task, to the call. A
 * verdict that comes first is remembered (the last maxTasks tasks).
 */
export class DriftAborts {
  private controllers = new Map<string, AbortController>();
  constructor(private readonly maxTasks = 10_000) {}

  /** signal fires when an abort verdict for the task arrives (or has arrived). */
  signal(taskId: string): AbortSignal {
    return this.controller(taskId).signal;
  }

  /** link aborts controller (the one whose signal the SDK call has) on the task's abort verdict. */
  link(taskId: string, controller: AbortController): void {
    const s = this.signal(taskId);
    if (s.aborted) controller.abort(s.reason);
    else s.addEventListener('abort', () => controller.abort(s.reason), { once: true });
  }

  /** handle is a DriftHandler: an abort verdict aborts its task's signal. */
  readonly handle = (ev: DriftEvent): void => {
    if (ev.drift.verdict?.action === 'abort') this.controller(ev.drift.taskId).abort(new DriftAbortError(ev));
  };

  /** forget drops a finished task. */
  forget(taskId: string): void {
    this.controllers.delete(taskId);
  }

  private controller(taskId: string): AbortController {
    let c = this.controllers.get(taskId);
    if (!c) {
      while (this.controllers.size >= this.maxTasks) this.controllers.delete(this.controllers.keys().next().value!);
      this.controllers.set(taskId, (c = new AbortController()));
    }
    return c;
  }
}
