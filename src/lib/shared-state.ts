/**
 * State shared between instances: fixed-window counters (rate limits) and pub/sub (cache
 * invalidation). Redis when REDIS_URL is set; an in-process fallback otherwise.
 */
import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';

export interface WindowCount {
  count: number;
  /** Epoch ms at which the window ends. */
  resetAt: number;
}

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
  slidingHit(key: string, windowMs: number, now?: number): Promise<number>;
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

const SWEEP_EVERY_MS = 60_000;

/** In-process counters and pub/sub: correct for one instance. */
export function memoryState(): SharedState {
  const counters = new Map<string, WindowCount>();
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  // Finished windows are dropped by the hits themselves, at most once a minute, so the map does not
  // grow without bound and no timer is needed (docs/decisions.md, "Background jobs").
  let nextSweepAt = Date.now() + SWEEP_EVERY_MS;
  return {
    kind: 'memory',
    async hit(key, windowMs, now = Date.now()) {
      if (now >= nextSweepAt) {
        nextSweepAt = now + SWEEP_EVERY_MS;
        for (const [k, v] of counters) if (v.resetAt <= now) counters.delete(k);
      }
      const start = now - (now % windowMs);
      const k = `${key}:${start}`;
      let c = counters.get(k);
      if (!c) counters.set(k, (c = { count: 0, resetAt: start + windowMs }));
      c.count += 1;
      return { count: c.count, resetAt: c.resetAt };
    },
    async slidingHit(key, windowMs, now = Date.now()) {
      const start = now - (now % windowMs);
      const k = `sw:${key}:${start}`;
      let c = counters.get(k);
      // Kept one window longer than it counts: the next window reads it as its previous one.
      if (!c) counters.set(k, (c = { count: 0, resetAt: start + 2 * windowMs }));
      c.count += 1;
      const previous = counters.get(`sw:${key}:${start - windowMs}`)?.count ?? 0;
      return c.count + previous * (1 - (now - start) / windowMs);
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
  // Auto-pipelining batches the commands of concurrent requests into one write per tick.
  const cmd = new Redis(url, { ...options, enableAutoPipelining: true });
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
