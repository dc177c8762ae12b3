// The emitter's outbox: lifecycle events leave the A2A call path at once and
// are published in batches, in order, from a bounded buffer. A full buffer,
// an unreachable server or a failed publish drops events; they are counted
// and logged, never thrown at the caller.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { CloudEvent } from 'cloudevents';
import { binary } from './cloudevent.js';

export interface Logger {
  warn(message: string): void;
}

export interface OutboxOptions {
  /** A connection the caller owns; or servers, for one the outbox opens (and closes). */
  connection?: NatsConnection;
  servers?: string | string[];
  /** Events the buffer holds before it drops new ones (default 1024). */
  maxPending?: number;
  /** Events published together, acks awaited together (default 64). */
  batchSize?: number;
  /** Bound of one publish, ack included, and of connecting (default 5000 ms). */
  timeoutMs?: number;
  /** Where drops are reported (default console). At most one line per 10 s. */
  logger?: Logger;
}

interface Pending {
  subject: string;
  event: CloudEvent<unknown>;
}

export class Outbox {
  /** Events dropped so far (buffer full, no server, failed publish). */
  dropped = 0;
  /** Events the stream acknowledged. */
  published = 0;

  private queue: Pending[] = [];
  private running?: Promise<void>;
  private js?: JetStreamClient;
  private nc?: NatsConnection;
  private pausedUntil = 0; // after a failed connect or a batch that failed whole: drop, do not wait
  private lastWarn = 0;
  private unreported = 0;
  private closed = false;
  private readonly opts: Required<Pick<OutboxOptions, 'maxPending' | 'batchSize' | 'timeoutMs' | 'logger'>> & OutboxOptions;

  constructor(opts: OutboxOptions) {
    if (!opts.connection && !opts.servers) throw new Error('carddrift: give a NATS connection or servers');
    this.opts = { maxPending: 1024, batchSize: 64, timeoutMs: 5000, logger: console, ...opts };
  }

  /** add queues an event; it never blocks and never throws. */
  add(subject: string, event: CloudEvent<unknown>): void {
    if (this.closed || this.queue.length >= this.opts.maxPending) {
      this.drop(1, this.closed ? 'emitter closed' : 'buffer full');
      return;
    }
    this.queue.push({ subject, event });
    this.running ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.run());
  }

  /** flush resolves once every event queued so far is published or dropped. */
  async flush(): Promise<void> {
    while (this.running) await this.running;
  }

  /** close flushes, then closes the connection the outbox opened. Later events are dropped. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    if (!this.opts.connection) await this.nc?.close();
  }

  private async run(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.opts.batchSize);
      const js = Date.now() < this.pausedUntil ? undefined : await this.jetstream();
      if (!js) {
        this.drop(batch.length, 'NATS unreachable');
        continue;
      }
      const acks = await Promise.allSettled(batch.map(async ({ subject, event }) => {
        const { headers, data } = binary(event);
        return js.publish(subject, data, { headers, msgID: `${event.source}/${event.id}`, timeout: this.opts.timeoutMs });
      }));
      const failed = acks.filter((a) => a.status === 'rejected') as PromiseRejectedResult[];
      this.published += acks.length - failed.length;
      if (failed.length > 0) this.drop(failed.length, `publish failed: ${failed[0].reason}`);
      if (failed.length === acks.length) this.pausedUntil = Date.now() + 1000; // the next batches would wait as long
    }
    this.running = undefined;
  }

  private async jetstream(): Promise<JetStreamClient | undefined> {
    if (this.js) return this.js;
    if (this.opts.connection) return (this.js = jetstream(this.opts.connection));
    try {
      this.nc = await connect({ servers: this.opts.servers, timeout: this.opts.timeoutMs, maxReconnectAttempts: -1 });
      return (this.js = jetstream(this.nc));
    } catch {
      this.pausedUntil = Date.now() + 1000; // one attempt a second at most
      return undefined;
    }
  }

  private drop(n: number, reason: string): void {
    this.dropped += n;
    this.unreported += n;
    const now = Date.now();
    if (now - this.lastWarn >= 10_000) {
      this.opts.logger.warn(`carddrift: dropped ${this.unreported} lifecycle event(s) (${this.dropped} in all): ${reason}`);
      this.lastWarn = now;
      this.unreported = 0;
    }
  }
}
