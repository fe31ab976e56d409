/** Durable background jobs, schedules and process-local tasks (docs/decisions.md, "Background jobs"). */
export { enqueue, DEFAULT_MAX_ATTEMPTS, type EnqueueInput } from './enqueue.js';
export { JobRunner, type JobRunnerOptions } from './runner.js';
export { backoffDelayMs } from './backoff.js';
export { listDeadJobs, type DeadJob } from './store.js';
export type { JobsSnapshot, TypeCounters } from './metrics.js';
export { SYSTEM_ORGANIZATION_ID, type Job, type JobHandler, type JobLogger, type JobTypeOptions, type Now } from './types.js';
