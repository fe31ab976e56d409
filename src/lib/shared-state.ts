/**
 * State shared between instances: fixed-window counters (rate limits), versioned values (the spend
 * counter) and pub/sub (cache invalidation). Redis when REDIS_URL is set; an in-process fallback
 * otherwise.
 */
import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';

export interface WindowCount {
  count: number;
  /** Epoch ms at which the window ends. */
  resetAt: number;
}

/**
 * A value now or later. The in-process state answers the reads of the enforce path (sliding window,
 * versioned value) at once, Redis with a promise: the hot path awaits only real I/O
 * (docs/decisions.md, "Enforce route").
 */
export type MaybePromise<T> = T | Promise<T>;

export interface SharedState {
  kind: 'redis' | 'memory';
  /**
   * Adds one to the counter of `key` in the current window of `windowMs`, answering the new count.
   * `now` (epoch ms, default the machine's time) places the window: callers pass their injected clock.
   */
  hit(key: string, windowMs: number, now?: number): Promise<WindowCount>;
  /**
   * Adds one to `key` in a sliding window of `windowMs` ending at `now`, answering the estimated
   * count in it (this hit included): this fixed window's count plus the previous window's, weighted
   * by how much of it the sliding window still covers (the two-window estimate of sliding-window
   * rate limiters). Policy limits use it (docs/decisions.md, "Enforce route").
   */
  slidingHit(key: string, windowMs: number, now?: number): MaybePromise<number>;
  /**
   * Stores `value` under `key` for `ttlMs` unless the key holds a version >= `version`: writers that
   * race keep the newest version whatever order they land in (docs/decisions.md, "Spend counter").
   * `value` must not contain a newline.
   */
  putVersioned(key: string, version: number, value: string, ttlMs: number): Promise<void>;
  /** The value last stored by putVersioned, with its version; null when absent or expired. */
  getVersioned(key: string): MaybePromise<Versioned | null>;
  publish(channel: string, message: string): Promise<void>;
  subscribe(channel: string, handler: (message: string) => void): void;
  /**
   * Registers a handler run when the pub/sub connection is back after a loss. Messages published
   * while it was away are lost (pub/sub is at-most-once), so subscribers drop their local caches.
   */
  onReconnect(handler: () => void): void;
  /** True when the backing store answers. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** A value stored with putVersioned. */
export interface Versioned {
  version: number;
  value: string;
}

const SWEEP_EVERY_MS = 60_000;

/** `version\nvalue`, as a versioned value is stored. */
const parseVersioned = (raw: string | null): Versioned | null => {
  if (raw === null) return null;
  const nl = raw.indexOf('\n');
  return { version: Number(raw.slice(0, nl)), value: raw.slice(nl + 1) };
};

/** In-process counters and pub/sub: correct for one instance. */
export function memoryState(): SharedState {
  const counters = new Map<string, WindowCount>();
  const versioned = new Map<string, Versioned & { expiresAt: number }>();
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  // Finished windows and expired values are dropped by the writes themselves, at most once a minute,
  // so the maps do not grow without bound and no timer is needed (docs/decisions.md, "Background jobs").
  // Two clocks, two sweeps: windows live on the caller's clock (often injected), versioned values
  // on the machine's time, as their TTL does.
  let nextSweepAt = Date.now() + SWEEP_EVERY_MS;
  const sweep = (now: number) => {
    if (now < nextSweepAt) return;
    nextSweepAt = now + SWEEP_EVERY_MS;
    for (const [k, v] of counters) if (v.resetAt <= now) counters.delete(k);
  };
  let nextVersionedSweepAt = Date.now() + SWEEP_EVERY_MS;
  const sweepVersioned = (wall: number) => {
    if (wall < nextVersionedSweepAt) return;
    nextVersionedSweepAt = wall + SWEEP_EVERY_MS;
    for (const [k, v] of versioned) if (v.expiresAt <= wall) versioned.delete(k);
  };
  return {
    kind: 'memory',
    async hit(key, windowMs, now = Date.now()) {
      sweep(now);
      const start = now - (now % windowMs);
      const k = `${key}:${start}`;
      let c = counters.get(k);
      if (!c) counters.set(k, (c = { count: 0, resetAt: start + windowMs }));
      c.count += 1;
      return { count: c.count, resetAt: c.resetAt };
    },
    slidingHit(key, windowMs, now = Date.now()) {
      sweep(now);
      const start = now - (now % windowMs);
      const k = `sw:${key}:${start}`;
      let c = counters.get(k);
      // Kept one window longer than it counts: the next window reads it as its previous one.
      if (!c) counters.set(k, (c = { count: 0, resetAt: start + 2 * windowMs }));
      c.count += 1;
      const previous = counters.get(`sw:${key}:${start - windowMs}`)?.count ?? 0;
      return c.count + previous * (1 - (now - start) / windowMs);
    },
    // Expiry on the machine's time, as Redis's PX is: a TTL bounds staleness, it is not a rule.
    async putVersioned(key, version, value, ttlMs) {
      const wall = Date.now();
      sweepVersioned(wall);
      const cur = versioned.get(key);
      if (cur && cur.expiresAt > wall && cur.version >= version) return;
      versioned.set(key, { version, value, expiresAt: wall + ttlMs });
    },
    getVersioned(key) {
      const cur = versioned.get(key);
      if (!cur || cur.expiresAt <= Date.now()) return null;
      return { version: cur.version, value: cur.value };
    },
    async publish(channel, message) {
      bus.emit(channel, message);
    },
    subscribe(channel, handler) {
      bus.on(channel, handler);
    },
    // The in-process bus never loses a message.
    onReconnect() {},
    ping: async () => true,
    async close() {
      bus.removeAllListeners();
    },
  };
}

/** Redis-backed counters and pub/sub, shared by every instance pointing at the same Redis. */
export async function redisState(url: string, prefix = 'agov:'): Promise<SharedState> {
  // Commands fail fast while Redis is down instead of queueing: callers decide to fail open.
  const options = { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true, connectTimeout: 3000 };
  // A Redis that is connected but stalled fails a command after this long instead of holding the
  // request (ingest waits for its spend write, enforce for its spend read; both fall back).
  const COMMAND_TIMEOUT_MS = 1000;
  // Auto-pipelining batches the commands of concurrent requests into one write per tick.
  const cmd = new Redis(url, { ...options, enableAutoPipelining: true, commandTimeout: COMMAND_TIMEOUT_MS });
  // One command per hit: increment, and start the expiry with the window's first hit.
  cmd.defineCommand('agovHit', {
    numberOfKeys: 1,
    lua: "local c = redis.call('INCR', KEYS[1]) if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return c",
  });
  // A sliding-window hit: increment this window's key, read the previous window's, in one command.
  cmd.defineCommand('agovSlidingHit', {
    numberOfKeys: 2,
    lua: "local c = redis.call('INCR', KEYS[1]) if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return {c, tonumber(redis.call('GET', KEYS[2]) or '0')}",
  });
  // Keeps the newest version: write only when the stored one is older (or absent). Stored as `version\nvalue`.
  cmd.defineCommand('agovPutVersioned', {
    numberOfKeys: 1,
    lua: "local cur = redis.call('GET', KEYS[1]) if cur then local v = tonumber(string.match(cur, '^([^\\n]*)')) if v and v >= tonumber(ARGV[1]) then return 0 end end redis.call('SET', KEYS[1], ARGV[1] .. '\\n' .. ARGV[2], 'PX', ARGV[3]) return 1",
  });
  // Named so that an operator (or a test) can tell this instance's subscriber apart in CLIENT LIST.
  const sub = new Redis(url, { ...options, enableOfflineQueue: true, connectionName: `${prefix}sub` });
  cmd.on('error', () => {});
  sub.on('error', () => {});
  // ioredis reconnects and resubscribes by itself; every `ready` after the first is a reconnect.
  const reconnectHandlers: Array<() => void> = [];
  let connectedOnce = false;
  sub.on('ready', () => {
    if (!connectedOnce) {
      connectedOnce = true;
      return;
    }
    for (const h of reconnectHandlers) h();
  });
  await cmd.connect();
  await sub.connect();
  const handlers = new Map<string, Array<(m: string) => void>>();
  sub.on('message', (channel: string, message: string) => {
    for (const h of handlers.get(channel.slice(prefix.length)) ?? []) h(message);
  });
  return {
    kind: 'redis',
    async hit(key, windowMs, now = Date.now()) {
      const start = now - (now % windowMs);
      const k = `${prefix}rl:${key}:${start}`;
      // The key expires shortly after its window ends.
      const count = Number(await (cmd as unknown as { agovHit(k: string, ttl: number): Promise<number> }).agovHit(k, windowMs + 10_000));
      return { count, resetAt: start + windowMs };
    },
    async slidingHit(key, windowMs, now = Date.now()) {
      const start = now - (now % windowMs);
      // One hash tag: both windows of a key live on one Redis Cluster slot. Kept two windows long.
      const base = `${prefix}sw:{${key}}:`;
      const [current, previous] = await (cmd as unknown as { agovSlidingHit(a: string, b: string, ttl: number): Promise<[number, number]> }).agovSlidingHit(`${base}${start}`, `${base}${start - windowMs}`, 2 * windowMs + 10_000);
      return Number(current) + Number(previous) * (1 - (now - start) / windowMs);
    },
    async putVersioned(key, version, value, ttlMs) {
      await (cmd as unknown as { agovPutVersioned(k: string, v: number, val: string, ttl: number): Promise<number> }).agovPutVersioned(`${prefix}v:${key}`, version, value, ttlMs);
    },
    async getVersioned(key) {
      return parseVersioned(await cmd.get(`${prefix}v:${key}`));
    },
    async publish(channel, message) {
      await cmd.publish(prefix + channel, message);
    },
    subscribe(channel, handler) {
      const list = handlers.get(channel);
      if (list) list.push(handler);
      else {
        handlers.set(channel, [handler]);
        void sub.subscribe(prefix + channel).catch(() => {});
      }
    },
    onReconnect(handler) {
      reconnectHandlers.push(handler);
    },
    async ping() {
      try {
        return (await cmd.ping()) === 'PONG';
      } catch {
        return false;
      }
    },
    async close() {
      cmd.disconnect();
      sub.disconnect();
    },
  };
}
