// NATS subjects, as package events of the Go module spells them (token.go).

const safe = /^[A-Za-z0-9_-]$/;
const hex = (b: number) => b.toString(16).toUpperCase().padStart(2, '0');

/**
 * token encodes an id as one NATS subject token: bytes in [A-Za-z0-9_-] are
 * kept, every other byte of its UTF-8 form becomes "=XX"; "" becomes "=".
 */
export function token(id: string): string {
  if (id === '') return '=';
  let out = '';
  for (const b of Buffer.from(id, 'utf8')) {
    const c = String.fromCharCode(b);
    out += b < 0x80 && safe.test(c) ? c : '=' + hex(b);
  }
  return out;
}

/**
 * agentHost returns the normalised host[:port] of an http(s) agent URL: host
 * lower-cased, trailing dot and the scheme's default port removed, IPv6 in
 * brackets.
 */
export function agentHost(agentUrl: string): string {
  const u = new URL(agentUrl); // drops the default port, lower-cases the host
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`agent URL ${agentUrl} is not http(s)`);
  const host = u.hostname.replace(/\.$/, '');
  if (host === '') throw new Error(`agent URL ${agentUrl} has no host`);
  return u.port ? `${host}:${u.port}` : host;
}

/** agentKey is the subject token of an agent: token(agentHost(agentUrl)). */
export const agentKey = (agentUrl: string) => token(agentHost(agentUrl));

/** lifecycleSubject is a2a.task.<kind>.<token(taskId)>; kind is the type's last part. */
export const lifecycleSubject = (type: string, taskId: string) =>
  `a2a.task.${type.slice('a2a.task.'.length)}.${token(taskId)}`;

/** driftFilter is the card.drift subject filter for an agent and/or a task (wildcards otherwise). */
export const driftFilter = (agent?: string, task?: string) =>
  `card.drift.${agent ? agentKey(agent) : '*'}.${task !== undefined ? token(task) : '*'}`;
