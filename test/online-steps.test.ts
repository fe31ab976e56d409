/**
 * Online migration steps (docs/decisions.md, "Migrations on large tables"): CREATE INDEX
 * CONCURRENTLY runs after the transactional migrations, outside any transaction on PostgreSQL
 * (plainly on PGlite), once: a recorded step is not run again.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf, type Database } from '../src/db/client.js';
import { openTestDatabase } from './helpers.js';

let database: Database;
const folder = mkdtempSync(join(tmpdir(), 'agov-online-'));
beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database.close();
  rmSync(folder, { recursive: true, force: true });
});

describe('online migration steps', () => {
  it('builds indexes CONCURRENTLY after the migrations, records each step, and never runs a recorded one again', async () => {
    writeFileSync(
      join(folder, '0001_traces_online_pair.sql'),
      'DROP INDEX CONCURRENTLY IF EXISTS traces_online_pair_idx;\n--> statement-breakpoint\n' +
        'CREATE INDEX CONCURRENTLY IF NOT EXISTS traces_online_pair_idx ON traces (organization_id, trace_id);\n',
    );
    // Not idempotent on purpose: running it a second time would fail.
    writeFileSync(join(folder, '0002_traces_online_once.sql'), 'CREATE INDEX CONCURRENTLY traces_online_once_idx ON traces (organization_id, agent_id);\n');

    await database.migrate({ onlineFolder: folder });
    await database.migrate({ onlineFolder: folder });

    const indexes = rowsOf<{ name: string; valid: boolean }>(
      await database.db.execute(sql`
        select c.relname as name, i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
        where c.relname in ('traces_online_pair_idx', 'traces_online_once_idx') order by c.relname`),
    );
    expect(indexes).toEqual([{ name: 'traces_online_once_idx', valid: true }, { name: 'traces_online_pair_idx', valid: true }]);
    const steps = rowsOf<{ name: string }>(await database.db.execute(sql`select name from drizzle.agov_online_steps order by name`));
    expect(steps.map((s) => s.name)).toEqual(['0001_traces_online_pair.sql', '0002_traces_online_once.sql']);
  });
});
