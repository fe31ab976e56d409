import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';

/**
 * Durable background jobs (docs/decisions.md, "Background jobs"). A job belongs to an organization;
 * system jobs (retention, schedules) carry the nil UUID as their organization, so there is no foreign
 * key to organizations. Status: pending → running → (deleted on success) | pending (retry) | dead.
 * While running, `run_at` is the end of the claim's lease: a job whose worker died is due again then.
 */
export const jobs = pgTable(
  'jobs',
  {
    organizationId: uuid('organization_id').notNull(),
    id: uuid('id').notNull(),
    type: text('type').notNull(),
    payload: jsonb('payload').$type<unknown>().notNull(),
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull(),
    runAt: timestamp('run_at', { withTimezone: true }).notNull(),
    lockedBy: text('locked_by'),
    idempotencyKey: text('idempotency_key'),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.organizationId, t.id] }),
    // Workers claim due jobs (pending, or running with an expired lease) in run_at order.
    index('jobs_due_idx').on(t.runAt).where(sql`${t.status} in ('pending', 'running')`),
    // One live job per idempotency key, type and organization (enqueue does nothing on a repeat).
    uniqueIndex('jobs_idempotency_uq').on(t.organizationId, t.type, t.idempotencyKey).where(sql`${t.idempotencyKey} is not null`),
  ],
);

/** Recurring schedules: the instance whose UPDATE moves `next_run_at` forward runs the period. */
export const jobSchedules = pgTable('job_schedules', {
  name: text('name').primaryKey(),
  everyMs: integer('every_ms').notNull(),
  nextRunAt: timestamp('next_run_at', { withTimezone: true }).notNull(),
  lastRunAt: timestamp('last_run_at', { withTimezone: true }),
  lastRunBy: text('last_run_by'),
});
