/** Durable background jobs, schedules and process-local tasks (docs/decisions.md, "Background jobs"). */
export { enqueue, type EnqueueInput } from './enqueue.js';
export { JobRunner, type JobRunnerOptions } from './runner.js';
export { listDeadJobs, type DeadJob } from './store.js';
export type { JobsSnapshot, TypeCounters } from './metrics.js';
export { SYSTEM_ORGANIZATION_ID, type Job, type JobHandler, type JobLogger, type JobTypeOptions } from './types.js';
