/** The API key cache (docs/decisions.md, "Security hardening"): hits, floods and concurrent misses, counted in queries. */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from './fixture.js';
import { createKey, type TestApp } from './helpers.js';

const queries: string[] = [];

beforeAll(async ({ app }) => {
  // Drizzle's session logs every query it runs, on PGlite and on pg alike: count through it.
  (app.database.db as unknown as { session: { logger: { logQuery(q: string): void } } }).session.logger = {
    logQuery: (q) => void queries.push(q),
  };
});

/** How many key lookups (by hash) ran while `fn` did. */
async function keyLookups(fn: () => Promise<unknown>) {
  const before = queries.length;
  await fn();
  return queries.slice(before).filter((q) => /from "api_key_hashes" inner join "api_keys"/.test(q)).length;
}

const health = (app: TestApp, key: string) => app.app.inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-api-key': key } });
/** A string of the exact key shape that no key has. */
const unknownKey = () => `svc_prod_${randomBytes(32).toString('base64url')}`;

describe('API key cache', () => {
  it('reads a key once, then answers from the cache', async ({ app, org }) => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    expect(await keyLookups(async () => expect((await health(app, k.key)).statusCode).toBe(200))).toBe(1);
    expect(await keyLookups(async () => expect((await health(app, k.key)).statusCode).toBe(200))).toBe(0);
  });

  it('runs one query for many concurrent requests with the same unknown key', async ({ app }) => {
    const key = unknownKey();
    const n = await keyLookups(async () => {
      const res = await Promise.all(Array.from({ length: 20 }, () => health(app, key)));
      expect(res.every((r) => r.statusCode === 401)).toBe(true);
    });
    expect(n).toBe(1);
    // Remembered as unknown for a while: no query either.
    expect(await keyLookups(() => health(app, key))).toBe(0);
  });

  it('refuses strings that cannot be keys without a query', async ({ app }) => {
    for (const bad of ['svc_prod_short', `svc_live_${'a'.repeat(40)}`, `svc_prod_${'a'.repeat(40)}!`, `svc_dev_${'a'.repeat(300)}`]) {
      expect(await keyLookups(async () => expect((await health(app, bad)).statusCode).toBe(401))).toBe(0);
    }
  });

  it('keeps a valid key cached through a flood of bogus keys', async ({ app, org }) => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    expect((await health(app, k.key)).statusCode).toBe(200);
    // More bogus svc_ strings than the old cache held before it emptied itself (10,000).
    const flood = await keyLookups(async () => {
      for (let i = 0; i < 10_050; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, j) => health(app, `svc_prod_${i + j}`)));
      }
    });
    expect(flood).toBe(0);
    expect(await keyLookups(async () => expect((await health(app, k.key)).statusCode).toBe(200))).toBe(0);
  });

  it('keeps a valid key cached while unknown keys of the right shape come and go', async ({ app, org }) => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    expect((await health(app, k.key)).statusCode).toBe(200);
    await Promise.all(Array.from({ length: 200 }, () => health(app, unknownKey())));
    expect(await keyLookups(async () => expect((await health(app, k.key)).statusCode).toBe(200))).toBe(0);
  });
});
