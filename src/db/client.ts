/**
 * The database: PGlite (embedded, default) or PostgreSQL via `pg`, behind one Drizzle type.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import * as schema from './schema/index.js';
import { applyOnlineSteps } from './online-steps.js';

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Anything queries can run on: the database or an open transaction. */
export type Executor = Db | Tx;

export interface Database {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** Human-readable location for logs (no credentials). */
  describe: string;
  /**
   * Applies committed migrations, then the online steps (src/db/online: outside any transaction);
   * safe to call from several processes at once. `onlineFolder` replaces src/db/online (tests).
   */
  migrate(opts?: { onlineFolder?: string }): Promise<void>;
  /** Round trip to the database; throws when unreachable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url));
const onlineFolder = fileURLToPath(new URL('./online', import.meta.url));
// Arbitrary constant: the advisory lock id that serializes migrations across instances.
const MIGRATION_LOCK_ID = 724_011_337;

/**
 * Opens PostgreSQL when a URL is given, else PGlite in `dataDir` (or in memory when dataDir is null),
 * starting from `template` (a `dumpDataDir` tarball) when given.
 */
export async function openDatabase(opts: { url?: string; dataDir?: string | null; poolSize?: number; template?: Blob }): Promise<Database> {
  if (opts.url) return openPostgres(opts.url, opts.poolSize ?? 10);
  return openPglite(opts.dataDir ?? null, opts.template);
}

async function openPglite(dataDir: string | null, template?: Blob): Promise<Database> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const client = new PGlite({ ...(dataDir ? { dataDir } : {}), ...(template ? { loadDataDir: template } : {}) });
  await client.waitReady;
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  return {
    db,
    kind: 'pglite',
    describe: dataDir ? `PGlite (embedded) at ${dataDir}` : 'PGlite (embedded, in memory)',
    // PGlite is single-connection and single-process: no lock needed, and no concurrent writer for
    // CONCURRENTLY to spare, so online steps run plainly.
    migrate: async (opts = {}) => {
      await migratePglite(db as never, { migrationsFolder });
      await applyOnlineSteps(
        opts.onlineFolder ?? onlineFolder,
        (statement) => client.exec(statement),
        async (statement, params) => (await client.query<Record<string, unknown>>(statement, params)).rows,
        { plain: true },
      );
    },
    ping: async () => {
      await client.query('select 1');
    },
    close: () => client.close(),
  };
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 5000 });
  // An idle client's error (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  let host = 'postgres';
  try {
    const u = new URL(url);
    host = `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    /* keep the generic name */
  }
  return {
    db,
    kind: 'postgres',
    describe: `PostgreSQL at ${host}`,
    migrate: async (opts = {}) => {
      // Several instances may start together: a session advisory lock on one connection
      // makes the others wait, then find nothing left to apply.
      const conn = await pool.connect();
      try {
        await conn.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
        try {
          await migratePg(drizzlePg(conn, { schema }), { migrationsFolder });
          // Under the same lock, one statement per query (a multi-statement query is one implicit transaction).
          await applyOnlineSteps(
            opts.onlineFolder ?? onlineFolder,
            (statement) => conn.query(statement),
            async (statement, params) => (await conn.query(statement, params)).rows,
            { plain: false },
          );
        } finally {
          await conn.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]);
        }
      } finally {
        conn.release();
      }
    },
    ping: async () => {
      await db.execute(sql`select 1`);
    },
    close: () => pool.end(),
  };
}

/** Rows of a raw `db.execute` result, whichever driver ran it. */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}
