// CloudEvents on NATS as package events of the Go module writes and reads
// them: binary mode, lower-case ce- headers whose values are percent-encoded
// like the CloudEvents HTTP binding (encode.go); structured mode on read.
import { CloudEvent } from 'cloudevents';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';

/** The id of the schema of each event type (its $id; the ce-dataschema). */
export const dataschema = (type: string) => `https://carddrift.dev/schemas/${type}/v1.json`;

/** W3C trace context, carried as the CloudEvents distributed-tracing extension. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** newEvent builds the CloudEvent of a lifecycle event (validated by the SDK). */
export function newEvent<T>(type: string, source: string, subject: string, data: T, trace?: TraceContext): CloudEvent<T> {
  const ext: Record<string, string> = {};
  if (trace?.traceparent) {
    ext.traceparent = trace.traceparent;
    if (trace.tracestate) ext.tracestate = trace.tracestate;
  }
  return new CloudEvent<T>({
    specversion: '1.0', id: crypto.randomUUID(), source, type, subject,
    time: new Date().toISOString(), dataschema: dataschema(type), datacontenttype: 'application/json',
    data, ...ext,
  });
}

const attributes = ['specversion', 'id', 'source', 'type', 'subject', 'time', 'dataschema', 'datacontenttype'];

/** binary returns the headers and body of ce in binary mode. */
export function binary(ce: CloudEvent<unknown>): { headers: MsgHdrs; data: Uint8Array } {
  const h = natsHeaders();
  const rec = ce.toJSON() as Record<string, unknown>;
  const names = [...attributes, ...Object.keys(rec).filter((k) => !attributes.includes(k) && k !== 'data' && k !== 'data_base64')];
  for (const name of names) {
    const v = rec[name];
    if (v !== undefined && v !== null) h.set(`ce-${name}`, escape(String(v)));
  }
  return { headers: h, data: Buffer.from(JSON.stringify(ce.data)) };
}

// escape percent-encodes space, '"', '%' and every byte outside printable ASCII.
function escape(s: string): string {
  if (!/[\x00-\x20"%\x7f-\uffff]/.test(s)) return s;
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    out += b <= 0x20 || b >= 0x7f || b === 0x22 || b === 0x25 ? '%' + b.toString(16).toUpperCase().padStart(2, '0') : String.fromCharCode(b);
  }
  return out;
}

/** decode reads a CloudEvent from a NATS message in either mode. */
export function decode<T>(headers: MsgHdrs | undefined, data: Uint8Array): CloudEvent<T> {
  const body = Buffer.from(data).toString('utf8');
  if (headers?.has('ce-specversion')) {
    const rec: Record<string, unknown> = {};
    for (const k of headers.keys()) {
      if (k.startsWith('ce-')) rec[k.slice(3)] = decodeURIComponent(headers.get(k));
    }
    return new CloudEvent<T>({ ...rec, data: JSON.parse(body) } as never);
  }
  const ct = headers?.get('content-type') ?? '';
  if (!ct.startsWith('application/cloudevents+json')) throw new Error(`not a CloudEvent (content-type ${JSON.stringify(ct)})`);
  return new CloudEvent<T>(JSON.parse(body));
}
