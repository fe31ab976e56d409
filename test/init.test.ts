import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from './fixture.js';
import { headlessInit, isEmpty } from '../src/domains/organizations/service.js';
import { generateKey } from '../src/domains/api-keys/key-material.js';
import { buildApp } from '../src/app.js';
import { parseConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { memoryState } from '../src/lib/shared-state.js';
import { testDatabaseUrl, type TestApp } from './helpers.js';

const run = promisify(execFile);

describe('headless first start', () => {
  // The fixture's app (test/fixture.ts): its organization is made only when a test asks for `org`, so the database starts empty.
  let t: TestApp;
  beforeAll(async ({ app }) => {
    t = app;
  });

  it('creates the organization with the given admin key only when the database is empty', async () => {
    const key = generateKey('staging');
    // Every test file starts from an empty copy of the migrated template (test/global-setup.ts).
    expect(await isEmpty(t.database.db)).toBe(true);
    const out = await headlessInit(t.database.db, 'Headless Co', key);
    expect(out.created).toBe(true);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/settings/organization', headers: { 'x-api-key': key } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.name).toBe('Headless Co');
    expect(await headlessInit(t.database.db, 'Again', generateKey('staging'))).toMatchObject({ created: false });
  });

  it('refuses a key that does not have the key form', async () => {
    await expect(headlessInit(t.database.db, 'Bad', 'hunter2')).resolves.toMatchObject({ created: false });
    const fresh = await openDatabase({ dataDir: null });
    await fresh.migrate();
    await expect(headlessInit(fresh.db, 'Bad', 'hunter2')).rejects.toThrow(/svc_prod_/);
    await fresh.close();
  });
});

describe('agov init (CLI)', () => {
  it('creates an organization and prints a working admin key once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agov-cli-'));
    try {
      const env = { ...process.env, DATA_DIR: dir, ...(process.env.DATABASE_URL ? { DATABASE_URL: await testDatabaseUrl() } : {}) };
      const { stdout } = await run('node', ['bin/agov.js', 'init', '--org', 'CLI Co', '--json'], { env, timeout: 60_000 });
      const out = JSON.parse(stdout.trim().split('\n').pop()!);
      expect(out.apiKey).toMatch(/^svc_prod_/);
      // Open the same database the CLI wrote (PGlite dir, or DATABASE_URL when set) and use the key.
      const config = parseConfig({ LOG_LEVEL: 'silent', DATABASE_URL: env.DATABASE_URL ?? '' });
      const database = await openDatabase({ url: config.DATABASE_URL, dataDir: dir });
      const app = await buildApp({ config, database, state: memoryState() });
      try {
        const res = await app.inject({ method: 'GET', url: '/api/v1/settings/organization', headers: { 'x-api-key': out.apiKey } });
        expect(res.statusCode).toBe(200);
        expect(res.json().data).toMatchObject({ id: out.organizationId, name: 'CLI Co' });
      } finally {
        await app.close();
        await database.close();
      }
      const bad = await run('node', ['bin/agov.js', 'init'], { env, timeout: 60_000 }).catch((e) => e);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/--org/);
      // A name taken: refused unless --force, which warns and creates a second one.
      const dup = await run('node', ['bin/agov.js', 'init', '--org', 'CLI Co', '--json'], { env, timeout: 60_000 }).catch((e) => e);
      expect(dup.code).toBe(1);
      expect(dup.stderr).toMatch(/organization named "CLI Co" already exists.*--force/);
      expect(dup.stdout).not.toMatch(/svc_/);
      const forced = await run('node', ['bin/agov.js', 'init', '--org', 'CLI Co', '--force', '--json'], { env, timeout: 60_000 });
      expect(forced.stderr).toMatch(/warning: organization "CLI Co" already existed/);
      expect(JSON.parse(forced.stdout.trim().split('\n').pop()!).organizationId).not.toBe(out.organizationId);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Two child processes each open a PGlite: allow for a busy machine.
  }, 240_000);
});
