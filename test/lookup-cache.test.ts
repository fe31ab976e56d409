/**
 * SharedLookupCache (src/lib/lookup-cache.ts), the cache behind active policies, API keys and
 * webhook subscriptions: an invalidation on one instance reaches the others over the shared state,
 * and a pub/sub reconnect forgets everything. Two caches stand for two instances: on one in-process
 * state, and with REDIS_URL on two Redis connections (a reconnect forced by killing the subscribers).
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { SharedLookupCache } from '../src/lib/lookup-cache.js';
import { memoryState, redisState, type SharedState } from '../src/lib/shared-state.js';

const opts = { max: 100, maxMissing: 100, ttlMs: 60_000, missingTtlMs: 60_000 };

/** A source of values that counts its reads. */
function source() {
  const values = new Map<string, string>();
  let reads = 0;
  return {
    values,
    reads: () => reads,
    load: async (key: string) => {
      reads++;
      return values.get(key) ?? null;
    },
  };
}

/** Polls `read` until it answers `want` or a second has passed; answers the last value. */
async function within(read: () => Promise<string | null>, want: string | null) {
  let got = await read();
  for (let start = Date.now(); got !== want && Date.now() - start < 1000; got = await read()) await new Promise((r) => setTimeout(r, 10));
  return got;
}

/** Two instances' states and a way to force a pub/sub reconnect on both. */
interface Pair {
  a: SharedState;
  b: SharedState;
  reconnect(): Promise<void>;
  close(): Promise<void>;
}

/** One in-process state seen by both instances; its reconnect handlers are run by hand (memoryState never reconnects). */
function memoryPair(): Pair {
  const inner = memoryState();
  const handlers: Array<() => void> = [];
  const state: SharedState = { ...inner, onReconnect: (h) => void handlers.push(h) };
  return { a: state, b: state, reconnect: async () => handlers.forEach((h) => h()), close: () => inner.close() };
}

/** Two Redis-backed states on one key prefix; a reconnect is forced by killing their subscriber connections. */
async function redisPair(url: string): Promise<Pair> {
  const prefix = `agovtest:${randomUUID()}:`;
  const [a, b] = [await redisState(url, prefix), await redisState(url, prefix)];
  const admin = new Redis(url);
  return {
    a,
    b,
    async reconnect() {
      const clients = (await admin.client('LIST')) as string;
      const ids = clients.split('\n').filter((l) => l.includes(` name=${prefix}sub `)).map((l) => /\bid=(\d+)/.exec(l)![1]);
      expect(ids).toHaveLength(2);
      for (const id of ids) await admin.client('KILL', 'ID', id);
    },
    async close() {
      admin.disconnect();
      await Promise.all([a.close(), b.close()]);
    },
  };
}

const backends: Array<[string, () => Promise<Pair>]> = [['in-process state', async () => memoryPair()]];
if (process.env.REDIS_URL) backends.push(['Redis', () => redisPair(process.env.REDIS_URL!)]);

describe.each(backends)('SharedLookupCache over the %s', (_name, makePair) => {
  let pair: Pair | undefined;
  afterEach(async () => {
    await pair?.close();
    pair = undefined;
  });

  it("an invalidation on one instance is applied at once there and reaches the other's cache", async () => {
    pair = await makePair();
    const src = source();
    src.values.set('k', 'v1');
    const channel = `test:${randomUUID()}`;
    const onA = new SharedLookupCache(pair.a, channel, src.load, opts);
    const onB = new SharedLookupCache(pair.b, channel, src.load, opts);
    expect([await onA.get('k'), await onB.get('k')]).toEqual(['v1', 'v1']);
    src.values.set('k', 'v2');
    expect(await onB.get('k')).toBe('v1'); // cached: no read
    const reads = src.reads();
    await onA.invalidate('k');
    expect(await onA.get('k')).toBe('v2');
    expect(await within(() => onB.get('k'), 'v2')).toBe('v2');
    expect(src.reads()).toBe(reads + 2); // one read on each instance, none for other keys
  });

  it('caches sharing a channel forget only the keys of their own prefix', async () => {
    pair = await makePair();
    const keys = source();
    const orgs = source();
    keys.values.set('x', 'key1');
    orgs.values.set('x', 'org1');
    const channel = `test:${randomUUID()}`;
    const keysB = new SharedLookupCache(pair.b, channel, keys.load, { ...opts, prefix: 'key:' });
    const orgsB = new SharedLookupCache(pair.b, channel, orgs.load, { ...opts, prefix: 'org:' });
    const orgsA = new SharedLookupCache(pair.a, channel, orgs.load, { ...opts, prefix: 'org:' });
    expect([await keysB.get('x'), await orgsB.get('x')]).toEqual(['key1', 'org1']);
    keys.values.set('x', 'key2');
    orgs.values.set('x', 'org2');
    await orgsA.invalidate('x');
    expect(await within(() => orgsB.get('x'), 'org2')).toBe('org2');
    expect(await keysB.get('x')).toBe('key1'); // the other prefix's entry is kept
  });

  it('a pub/sub reconnect forgets every entry, found and missing', async () => {
    pair = await makePair();
    const src = source();
    src.values.set('k', 'v1');
    const cache = new SharedLookupCache(pair.b, `test:${randomUUID()}`, src.load, opts);
    expect([await cache.get('k'), await cache.get('new')]).toEqual(['v1', null]);
    // Changes whose invalidations were published while the subscriber was away.
    src.values.set('k', 'v2');
    src.values.set('new', 'n1');
    expect([await cache.get('k'), await cache.get('new')]).toEqual(['v1', null]);
    await pair.reconnect();
    expect(await within(() => cache.get('k'), 'v2')).toBe('v2');
    expect(await cache.get('new')).toBe('n1');
  });
});
