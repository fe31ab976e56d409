/** Shapes shared by the job runner's files (docs/decisions.md, "Background jobs"). */

/** The organization of system jobs: the nil UUID, which no organization has. */
export const SYSTEM_ORGANIZATION_ID = '00000000-0000-0000-0000-000000000000';

/** A claimed job as a handler sees it. */
export interface Job<P = unknown> {
  id: string;
  organizationId: string;
  type: string;
  payload: P;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
}

export type JobHandler<P = unknown> = (job: Job<P>) => Promise<void>;

export interface JobTypeOptions {
  /** How long a claim lasts; a job still running after it may be claimed again (default 5 minutes). */
  leaseMs?: number;
  /** Backoff before retry n is random in [0, min(maxDelayMs, baseDelayMs·2^(n-1))] (full jitter). */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

/** The pino-compatible subset the runner logs with. */
export interface JobLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
