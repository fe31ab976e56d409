/** The API key cache (docs/decisions.md, "Security hardening"): hits, floods and concurrent misses, counted in queries. */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createOrg, createTestApp, type TestApp, type TestOrg } from './helpers.js';

let t: TestApp;
let org: TestOrg;
const queries: string[] = [];

beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t);
  // Drizzle's session logs every query it runs, on PGlite and on pg alike: count through it.
  (t.database.db as unknown as { session: { logger: { logQuery(q: string): void } } }).session.logger = {
    logQuery: (q) => void queries.push(q),
  };
});
afterAll(() => t.close());

/** How many key lookups (by hash) ran while `fn` did. */
async function keyLookups(fn: () => Promise<unknown>) {
  const before = queries.length;
  await fn();
  return queries.slice(before).filter((q) => /from "api_keys" where "api_keys"\."key_hash"/.test(q)).length;
}

const health = (key: string) => t.app.inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-api-key': key } });
/** A string of the exact key shape that no key has. */
const unknownKey = () => `svc_prod_${randomBytes(32).toString('base64url')}`;

describe('API key cache', () => {
  it('reads a key once, then answers from the cache', async () => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    expect(await keyLookups(async () => expect((await health(k.key)).statusCode).toBe(200))).toBe(1);
    expect(await keyLookups(async () => expect((await health(k.key)).statusCode).toBe(200))).toBe(0);
  });

  it('runs one query for many concurrent requests with the same unknown key', async () => {
    const key = unknownKey();
    const n = await keyLookups(async () => {
      const res = await Promise.all(Array.from({ length: 20 }, () => health(key)));
      expect(res.every((r) => r.statusCode === 401)).toBe(true);
    });
    expect(n).toBe(1);
    // Remembered as unknown for a while: no query either.
    expect(await keyLookups(() => health(key))).toBe(0);
  });

  it('refuses strings that cannot be keys without a query', async () => {
    for (const bad of ['svc_prod_short', `svc_live_${'a'.repeat(40)}`, `svc_prod_${'a'.repeat(40)}!`, `svc_dev_${'a'.repeat(300)}`]) {
      expect(await keyLookups(async () => expect((await health(bad)).statusCode).toBe(401))).toBe(0);
    }
  });

  it('keeps a valid key cached through a flood of bogus keys', async () => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    expect((await health(k.key)).statusCode).toBe(200);
    // More bogus svc_ strings than the old cache held before it emptied itself (10,000).
    const flood = await keyLookups(async () => {
      for (let i = 0; i < 10_050; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, j) => health(`svc_prod_${i + j}`)));
      }
    });
    expect(flood).toBe(0);
    expect(await keyLookups(async () => expect((await health(k.key)).statusCode).toBe(200))).toBe(0);
  });

  it('keeps a valid key cached while unknown keys of the right shape come and go', async () => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    expect((await health(k.key)).statusCode).toBe(200);
    await Promise.all(Array.from({ length: 200 }, () => health(unknownKey())));
    expect(await keyLookups(async () => expect((await health(k.key)).statusCode).toBe(200))).toBe(0);
  });
});
