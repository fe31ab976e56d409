/**
 * Online migration steps: SQL that cannot run inside a transaction (CREATE INDEX CONCURRENTLY),
 * applied after drizzle's transactional migrations (docs/decisions.md, "Migrations on large
 * tables"). Each file of the folder is one step, applied in name order, its statements (split on
 * drizzle's `--> statement-breakpoint`) one at a time outside any transaction, then recorded in
 * `drizzle.agov_online_steps`; a recorded step never runs again.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Runs one SQL statement on its own (no transaction block around it). */
export type RunStatement = (statement: string) => Promise<unknown>;
/** Runs a query and answers its rows. */
export type QueryRows = (statement: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

export interface OnlineStep {
  name: string;
  statements: string[];
}

const STEP_FILE_RE = /^\d{4}_[a-z0-9_]+\.sql$/;

/** The steps of `folder` in name order (none when the folder is missing). */
function readOnlineSteps(folder: string): OnlineStep[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((f) => STEP_FILE_RE.test(f))
    .sort()
    .map((name) => ({
      name,
      statements: readFileSync(join(folder, name), 'utf8')
        .split('--> statement-breakpoint')
        .map((s) => s.trim())
        .filter(Boolean),
    }));
}

/**
 * Applies the steps of `folder` not yet recorded, in order. `plain` (PGlite: one process, no
 * concurrent writers to protect) drops the CONCURRENTLY keyword. The caller holds the migration
 * lock on PostgreSQL, so two instances never build the same index at once.
 */
export async function applyOnlineSteps(folder: string, run: RunStatement, query: QueryRows, opts: { plain: boolean }): Promise<string[]> {
  const steps = readOnlineSteps(folder);
  if (steps.length === 0) return [];
  await run('create schema if not exists drizzle');
  await run('create table if not exists drizzle.agov_online_steps (name text primary key, applied_at timestamptz not null default now())');
  const done = new Set((await query('select name from drizzle.agov_online_steps')).map((r) => String(r.name)));
  const applied: string[] = [];
  for (const step of steps) {
    if (done.has(step.name)) continue;
    // Not atomic by nature: a step interrupted midway runs again from its first statement, hence the
    // convention that each statement is idempotent (IF [NOT] EXISTS).
    for (const statement of step.statements) await run(opts.plain ? statement.replace(/\bconcurrently\b/gi, '') : statement);
    await query('insert into drizzle.agov_online_steps (name) values ($1) on conflict (name) do nothing', [step.name]);
    applied.push(step.name);
  }
  return applied;
}
