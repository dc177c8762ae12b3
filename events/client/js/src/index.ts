export { lifecycleInterceptor, fetchCard, withPlan, withTraceContext, mediaTypes } from './interceptor.js';
export type { InterceptorOptions, LifecycleInterceptor, Plan } from './interceptor.js';
export { watchDrift, DriftAborts, DriftAbortError } from './planner.js';
export type { DriftEvent, DriftHandler, DriftWatch, WatchOptions } from './planner.js';
export { token, agentHost, agentKey, lifecycleSubject, driftFilter } from './subjects.js';
export { dataschema, decode } from './cloudevent.js';
export type { TraceContext } from './cloudevent.js';
export type { Logger, OutboxOptions } from './outbox.js';
export * from './types.js';
