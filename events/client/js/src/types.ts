// The data of the events carddrift's contract names (schemas/*.json in the
// repository). Each object type has a shape below that the compiler holds to
// the type and the tests hold to the schema, so that neither can drift.

export type Posture = 'fail-closed' | 'degrade';
export type Action = 'abort' | 'replan' | 'continue';

/** What a submitted task needs of the agent; absent members are not required. */
export interface Requires {
  streaming?: boolean;
  pushNotifications?: boolean;
  inputModes?: string[];
  outputModes?: string[];
  security?: string[];
  scopes?: Record<string, string[]>;
  extensions?: string[];
  extendedCard?: boolean;
}

/** a2a.task.submitted: the task was planned against a card. */
export interface Submitted {
  taskId: string;
  agentUrl: string;
  skillId: string;
  requires?: Requires;
  posture?: Posture;
  idempotent?: boolean;
  card?: Record<string, unknown>;
  cardDigest?: string;
  cardUrl?: string;
}

/** a2a.task.request: a request of the task (attempt 1 = first try). */
export interface Request {
  taskId: string;
  agentUrl: string;
  method: string;
  attempt: number;
}

/** a2a.task.status: the client saw the task's state change. */
export interface Status {
  taskId: string;
  agentUrl: string;
  state: string;
  skillId?: string;
}

/** a2a.task.artifact: the client received an artifact with these media types. */
export interface Artifact {
  taskId: string;
  agentUrl: string;
  artifactId: string;
  mediaTypes: string[];
}

/** a2a.task.error: a request of the task failed with a JSON-RPC error. */
export interface TaskError {
  taskId: string;
  agentUrl: string;
  method: string;
  code: number;
  message: string;
}

export interface Signer {
  kid: string;
  alg: string;
  jku?: string;
  thumbprint?: string;
  source?: 'trusted' | 'jku';
  verified: boolean;
  reason: string;
}

export interface CardRef {
  digest: string;
  fingerprint?: string;
  etag?: string;
  fetchedAt?: string;
  signer?: Signer;
}

export interface Finding {
  rule: string;
  severity: 'breaking' | 'warning' | 'info';
  path: string;
  before?: unknown;
  after?: unknown;
  message: string;
  skill?: string;
  scheme?: string;
  scope?: string;
  extension?: string;
  touches?: boolean;
}

export interface Verdict {
  action: Action;
  posture: Posture;
  reason: string;
  replanSkill?: string;
}

export interface Trigger {
  eventId: string;
  type: string;
  source?: string;
}

/** card.drift: the task's pinned card and the live card differ. */
export interface Drift {
  taskId: string;
  agentUrl: string;
  cardUrl: string;
  pinned: CardRef;
  live: CardRef;
  findings: Finding[];
  verdict: Verdict;
  trigger: Trigger;
}

/** The lifecycle event types and their data. */
export interface Lifecycle {
  'a2a.task.submitted': Submitted;
  'a2a.task.request': Request;
  'a2a.task.status': Status;
  'a2a.task.artifact': Artifact;
  'a2a.task.error': TaskError;
}
export type LifecycleType = keyof Lifecycle;

/** Each member of T, and whether it is required. */
export type Shape<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? 'optional' : 'required' };

const r = 'required' as const;
const o = 'optional' as const;

/**
 * shapes: every object type of the contract, named by its place in the
 * schemas ("<schema type>" or "<schema type>#<$defs name or property>").
 */
export const shapes = {
  'a2a.task.submitted': { taskId: r, agentUrl: r, skillId: r, requires: o, posture: o, idempotent: o, card: o, cardDigest: o, cardUrl: o } satisfies Shape<Submitted>,
  'a2a.task.submitted#requires': { streaming: o, pushNotifications: o, inputModes: o, outputModes: o, security: o, scopes: o, extensions: o, extendedCard: o } satisfies Shape<Requires>,
  'a2a.task.request': { taskId: r, agentUrl: r, method: r, attempt: r } satisfies Shape<Request>,
  'a2a.task.status': { taskId: r, agentUrl: r, state: r, skillId: o } satisfies Shape<Status>,
  'a2a.task.artifact': { taskId: r, agentUrl: r, artifactId: r, mediaTypes: r } satisfies Shape<Artifact>,
  'a2a.task.error': { taskId: r, agentUrl: r, method: r, code: r, message: r } satisfies Shape<TaskError>,
  'card.drift': { taskId: r, agentUrl: r, cardUrl: r, pinned: r, live: r, findings: r, verdict: r, trigger: r } satisfies Shape<Drift>,
  'card.drift#verdict': { action: r, posture: r, reason: r, replanSkill: o } satisfies Shape<Verdict>,
  'card.drift#cardRef': { digest: r, fingerprint: o, etag: o, fetchedAt: o, signer: o } satisfies Shape<CardRef>,
  'card.drift#signer': { kid: r, alg: r, jku: o, thumbprint: o, source: o, verified: r, reason: r } satisfies Shape<Signer>,
  'card.drift#finding': { rule: r, severity: r, path: r, before: o, after: o, message: r, skill: o, scheme: o, scope: o, extension: o, touches: o } satisfies Shape<Finding>,
  'card.drift#trigger': { eventId: r, type: r, source: o } satisfies Shape<Trigger>,
};

/** The enumerations the types spell out, for the same check. */
export const enums = {
  'card.drift#verdict.action': ['abort', 'replan', 'continue'] satisfies Action[],
  'card.drift#verdict.posture': ['fail-closed', 'degrade'] satisfies Posture[],
  'card.drift#finding.severity': ['breaking', 'warning', 'info'] satisfies Finding['severity'][],
  'card.drift#signer.source': ['trusted', 'jku'] satisfies NonNullable<Signer['source']>[],
  'a2a.task.submitted.posture': ['fail-closed', 'degrade'] satisfies Posture[],
};
