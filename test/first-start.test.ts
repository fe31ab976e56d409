/** First start without AGOV_INIT_*: a default organization and its admin key in an owner-only file (docs/decisions.md, "First start"). */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { count } from 'drizzle-orm';
import { afterAll, describe, expect, it } from './fixture.js';
import { createTestApp } from './helpers.js';
import { organizations } from '../src/db/schema/index.js';
import { ADMIN_KEY_FILE, firstStart } from '../src/domains/organizations/first-start.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'agov-first-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('first start', () => {
  // The fixture's organization is made lazily: this file's database stays empty until a test asks for `org`.
  it('creates one organization when two instances start together, and its admin key works as admin', async ({ app }) => {
    const [a, b] = [tempDir(), tempDir()];
    const results = await Promise.all([app.container.services.organizations.firstStart(a), app.container.services.organizations.firstStart(b)]);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const [{ n }] = await app.database.db.select({ n: count() }).from(organizations);
    expect(n).toBe(1);
    const won = results.find((r) => r.created)!;
    if (!won.created) throw new Error('unreachable');
    expect(won.name).toBe('Default');
    const lost = won.keyFile.startsWith(a) ? b : a;
    expect(() => statSync(join(lost, ADMIN_KEY_FILE))).toThrow(/ENOENT/);

    expect(statSync(won.keyFile).mode & 0o777).toBe(0o600);
    const key = readFileSync(won.keyFile, 'utf8').trim();
    expect(key).toMatch(/^svc_prod_/);
    // Admin only: listing the API keys.
    const res = await app.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: { 'x-api-key': key } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toHaveLength(1);
  });

  it('creates nothing and leaves the file alone on a later start', async ({ app }) => {
    const dir = tempDir();
    const again = await app.container.services.organizations.firstStart(dir);
    expect(again).toEqual({ created: false });
    expect(() => statSync(join(dir, ADMIN_KEY_FILE))).toThrow(/ENOENT/);
    const [{ n }] = await app.database.db.select({ n: count() }).from(organizations);
    expect(n).toBe(1);
  });

  it('never overwrites a key file: an existing one on an empty database stops the start and creates nothing', async () => {
    const t = await createTestApp();
    try {
      // A fresh PGlite, or this file's PostgreSQL database (no longer empty): only the empty case applies.
      if (t.database.kind !== 'pglite') return;
      const dir = tempDir();
      const first = await firstStart(t.database.db, { dataDir: dir, clock: t.clock });
      expect(first.created).toBe(true);
      const t2 = await createTestApp();
      try {
        const before = readFileSync(join(dir, ADMIN_KEY_FILE), 'utf8');
        const mtime = statSync(join(dir, ADMIN_KEY_FILE)).mtimeMs;
        await expect(firstStart(t2.database.db, { dataDir: dir, clock: t2.clock })).rejects.toThrow(/exists but the database has no organization/);
        expect(readFileSync(join(dir, ADMIN_KEY_FILE), 'utf8')).toBe(before);
        expect(statSync(join(dir, ADMIN_KEY_FILE)).mtimeMs).toBe(mtime);
        const [{ n }] = await t2.database.db.select({ n: count() }).from(organizations);
        expect(n).toBe(0);
      } finally {
        await t2.close();
      }
    } finally {
      await t.close();
    }
  });
});
