/** Writes a job in the caller's transaction: it exists exactly when the change commits. */
import { newId } from '../db/schema/columns.js';
import { EventEmitter } from 'node:events';
import { sql } from 'drizzle-orm';
import { rowsOf, type Executor } from '../db/client.js';
import { SYSTEM_ORGANIZATION_ID } from './types.js';

/** The PostgreSQL channel a committed enqueue notifies (runners LISTEN on it; see listen.ts). */
export const JOBS_CHANNEL = 'agov_jobs';

/** In-process wake-up: runners in this process poll at once after an enqueue instead of waiting for the next tick. */
export const jobWakeups = new EventEmitter();
jobWakeups.setMaxListeners(0);

const DEFAULT_MAX_ATTEMPTS = 5;

export interface EnqueueInput {
  type: string;
  payload?: unknown;
  /** Omitted for system jobs (stored with the nil organization). */
  organizationId?: string;
  /** Not before this time (default: now). */
  runAt?: Date;
  /** A repeat with the same key, type and organization is ignored while the first is pending, running or dead. */
  idempotencyKey?: string;
  maxAttempts?: number;
}

/** Inserts a job on `executor` (the database or the caller's transaction); answers its id, or created=false on an idempotent repeat. */
export async function enqueue(executor: Executor, input: EnqueueInput, now: Date = new Date()): Promise<{ id: string | null; created: boolean }> {
  const id = newId();
  const org = input.organizationId ?? SYSTEM_ORGANIZATION_ID;
  const runAt = (input.runAt ?? now).toISOString();
  const maxAttempts = input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new Error(`maxAttempts must be a positive integer, got ${maxAttempts}`);
  // pg_notify inside the transaction is delivered at commit, and not at all on rollback.
  const result = await executor.execute(sql`
    with ins as (
      insert into jobs (organization_id, id, type, payload, status, attempts, max_attempts, run_at, idempotency_key, created_at, updated_at)
      values (${org}::uuid, ${id}::uuid, ${input.type}, ${JSON.stringify(input.payload ?? null)}::jsonb, 'pending', 0, ${maxAttempts},
              ${runAt}::timestamptz, ${input.idempotencyKey ?? null}, ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz)
      on conflict (organization_id, type, idempotency_key) where idempotency_key is not null do nothing
      returning id
    )
    select id, pg_notify(${JOBS_CHANNEL}, ${input.type}) from ins`);
  const created = rowsOf<{ id: string }>(result).length > 0;
  if (created) setImmediate(() => jobWakeups.emit('wake'));
  return { id: created ? id : null, created };
}
