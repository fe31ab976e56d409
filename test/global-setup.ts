/**
 * Migrates one template database before any test file runs, so that each file starts from a copy
 * instead of creating and migrating its own:
 * - PGlite: a migrated in-memory database dumped to a tarball; each file loads it (`loadDataDir`),
 *   which also skips PGlite's initdb, the slowest part of opening a fresh one.
 * - PostgreSQL (DATABASE_URL): a migrated `<db>_tpl_<pid>` database; each file gets its own
 *   `CREATE DATABASE … TEMPLATE` copy (test/helpers.ts), dropped here at the end.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import pg from 'pg';
import type { PGlite } from '@electric-sql/pglite';
import { openDatabase } from '../src/db/client.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Path of the migrated PGlite tarball (PGlite runs). */
    pgliteTemplatePath: string;
    /** Name of the migrated template database (PostgreSQL runs). */
    pgTemplateDatabase: string;
  }
}

/** The URL of `database` on the server of `url`. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Runs `sql` on the server's maintenance database (`postgres`). */
export async function onServer(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: withDatabase(url, 'postgres') });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export default async function setup(project: TestProject) {
  const url = process.env.DATABASE_URL;
  if (url) {
    const base = new URL(url).pathname.slice(1) || 'postgres';
    const template = `${base}_tpl_${process.pid}`.slice(0, 63);
    await onServer(url, `drop database if exists "${template}" with (force)`);
    await onServer(url, `create database "${template}"`);
    const database = await openDatabase({ url: withDatabase(url, template), poolSize: 1 });
    await database.migrate();
    await database.close();
    project.provide('pgTemplateDatabase', template);
    project.provide('pgliteTemplatePath', '');
    return async () => {
      // Every copy is named after the template (test/helpers.ts): drop them all, then the template.
      const client = new pg.Client({ connectionString: withDatabase(url, 'postgres') });
      await client.connect();
      try {
        const { rows } = await client.query<{ datname: string }>('select datname from pg_database where datname like $1', [`${template}%`]);
        for (const { datname } of rows) if (datname !== template) await client.query(`drop database if exists "${datname}" with (force)`);
        await client.query(`drop database if exists "${template}" with (force)`);
      } finally {
        await client.end();
      }
    };
  }
  const database = await openDatabase({ dataDir: null });
  await database.migrate();
  const client = (database.db as unknown as { $client: PGlite }).$client;
  const dump = await client.dumpDataDir('none');
  await database.close();
  const dir = mkdtempSync(join(tmpdir(), 'agov-test-template-'));
  const path = join(dir, 'pgdata.tar');
  writeFileSync(path, Buffer.from(await dump.arrayBuffer()));
  project.provide('pgliteTemplatePath', path);
  project.provide('pgTemplateDatabase', '');
  return () => rmSync(dir, { recursive: true, force: true });
}
