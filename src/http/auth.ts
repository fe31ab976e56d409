/**
 * Authentication (API keys, JWT), authorization (role, scope, agent keys), IP and environment
 * checks, and per-organization rate limits: one onRequest hook, run before the body is parsed.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { LRUCache } from 'lru-cache';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { jwtConfigProblems, type Config } from '../config.js';
import type { Db } from '../db/client.js';
import { environmentOfKey, findKeyByHash, hashKey, looksLikeKey, recordKeyUsage } from '../domains/api-keys/index.js';
import { securityOf } from '../domains/settings/index.js';
import type { SharedState, WindowCount } from '../lib/shared-state.js';
import { systemClock, type Clock } from '../core/clock.js';
import { compileAllowlist, ipAllowed } from '../lib/ip.js';
import { DomainError, forbidden, rateLimited, unauthorized } from '../core/errors.js';
import { SharedLookupCache } from '../lib/lookup-cache.js';
import { declaresAccess, roleAtLeast, roleForScopes, ROLES, type Principal, type Role, type RouteAuth, type Scope } from './principal.js';
import { upsertUserFromToken } from '../domains/users/service.js';

export const AUTH_CHANNEL = 'auth:invalidate';

interface CachedKey {
  id: string;
  organizationId: string;
  agentId: string | null;
  name: string;
  environment: string;
  scopes: Scope[];
  expiresAt: number | null;
  isActive: boolean;
  allow: ReturnType<typeof compileAllowlist>;
}

interface CachedOrg {
  id: string;
  allow: ReturnType<typeof compileAllowlist>;
  allowedEnvironments: string[];
}

// Bounded LRUs (docs/decisions.md, "Security hardening"): valid keys and unknown keys apart, so
// a flood of unknown keys never evicts a key in use.
const MAX_CACHED_KEYS = 10_000;
const MAX_UNKNOWN_KEYS = 10_000;
const MAX_CACHED_ORGS = 10_000;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NUL = /\u0000/;
// Identity providers sign with asymmetric keys only: pinning them rules out `none` and an HS256
// token "signed" with a published public key (algorithm confusion).
const JWKS_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
// Unknown keys are remembered briefly too, so a flood of bad keys does not become a flood of queries.
const NEGATIVE_TTL_MS = 5_000;

/** Buffers lastUsedAt/usageCount per key and writes them in one statement per interval. */
export class UsageRecorder {
  private pending = new Map<string, { n: number; at: Date }>();

  constructor(private db: Db, private log: { warn: (o: object, m: string) => void }) {}

  /** Counts one use of a key (no I/O). */
  record(keyId: string) {
    const p = this.pending.get(keyId);
    if (p) {
      p.n += 1;
      p.at = new Date();
    } else this.pending.set(keyId, { n: 1, at: new Date() });
  }

  /** Writes the buffered counts; on failure they are put back for the next flush. */
  async flush() {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await recordKeyUsage(this.db, [...batch].map(([id, u]) => ({ id, n: u.n, at: u.at })));
    } catch (err) {
      for (const [id, u] of batch) {
        const p = this.pending.get(id);
        if (p) p.n += u.n;
        else this.pending.set(id, u);
      }
      this.log.warn({ err }, 'could not write API key usage; will retry');
    }
  }

  /** The last flush. The interval flush is a process-local task of the job runner (src/jobs/process.ts). */
  async stop() {
    await this.flush();
  }
}

/** Resolves credentials to a Principal, with a cache invalidated over pub/sub on any key or settings change. */
export class Authenticator {
  private keys: SharedLookupCache<CachedKey>;
  private orgs: SharedLookupCache<CachedOrg>;
  private jwks: JWTVerifyGetKey | undefined;
  private secret: Uint8Array | undefined;

  constructor(
    private db: Db,
    private config: Config,
    state: SharedState,
    readonly usage: UsageRecorder,
    // Key expiry is a rule: it reads the injected clock, as the expiry's default did (src/core/clock.ts).
    private clock: Clock = systemClock,
  ) {
    const ttlMs = config.AUTH_CACHE_TTL_SECONDS * 1000;
    const missingTtlMs = Math.min(ttlMs, NEGATIVE_TTL_MS);
    // One channel for both caches, told apart by prefix (`key:<hash>`, `org:<id>`).
    this.keys = new SharedLookupCache(state, AUTH_CHANNEL, (hash) => this.loadKey(hash), { max: MAX_CACHED_KEYS, maxMissing: MAX_UNKNOWN_KEYS, ttlMs, missingTtlMs, prefix: 'key:' });
    this.orgs = new SharedLookupCache(state, AUTH_CHANNEL, (id) => this.loadOrg(id), { max: MAX_CACHED_ORGS, maxMissing: MAX_CACHED_ORGS, ttlMs, missingTtlMs, prefix: 'org:' });
    // parseConfig refuses these at start; checked again so that no other way of building a Config fails open.
    const jwtProblems = jwtConfigProblems(config);
    if (jwtProblems.length > 0) throw new Error(`Invalid JWT configuration: ${jwtProblems.join('; ')}`);
    if (config.AUTH_JWKS_URL) this.jwks = createRemoteJWKSet(new URL(config.AUTH_JWKS_URL));
    if (config.AUTH_JWT_SECRET) this.secret = new TextEncoder().encode(config.AUTH_JWT_SECRET);
  }

  /** Forgets a key (by hash) on every instance. */
  async invalidateKey(hash: string) {
    await this.keys.invalidate(hash);
  }

  /** Forgets an organization's security settings on every instance. */
  async invalidateOrg(orgId: string) {
    await this.orgs.invalidate(orgId);
  }

  private async loadKey(hash: string): Promise<CachedKey | null> {
    const row = await findKeyByHash(this.db, hash);
    const value: CachedKey | null = row
      ? {
          id: row.id,
          organizationId: row.organizationId,
          agentId: row.agentId,
          name: row.name,
          environment: row.environment,
          scopes: row.scopes as Scope[],
          expiresAt: row.expiresAt ? row.expiresAt.getTime() : null,
          isActive: row.isActive,
          allow: compileAllowlist(row.ipAllowlist),
        }
      : null;
    return value;
  }

  private async loadOrg(id: string): Promise<CachedOrg | null> {
    const row = await securityOf(this.db, id);
    return row ? { id: row.id, allow: compileAllowlist(row.ipAllowlist), allowedEnvironments: row.allowedEnvironments } : null;
  }

  /** Authenticates a request; throws 401 for bad credentials and 403 for IP or environment refusals. */
  async authenticate(request: FastifyRequest): Promise<Principal> {
    const apiKeyHeader = request.headers['x-api-key'];
    const authorization = request.headers.authorization;
    if (typeof apiKeyHeader === 'string' && apiKeyHeader.length > 0) return this.fromKey(apiKeyHeader, request.ip);
    if (typeof authorization === 'string') {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!m) throw unauthorized('Authorization header must be "Bearer <token>"');
      const token = m[1];
      return looksLikeKey(token) ? this.fromKey(token, request.ip) : this.fromJwt(token, request.ip);
    }
    throw unauthorized('Missing credentials: send X-API-Key or Authorization: Bearer');
  }

  /**
   * True when the request carries an API key this instance has already found (an active key in the
   * positive cache): checking it costs no query, so an address over the failed-authentication limit
   * still lets it through (docs/decisions.md, "Failed authentication per IP").
   */
  holdsKnownKey(request: FastifyRequest): boolean {
    const header = request.headers['x-api-key'];
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    const key = typeof header === 'string' && header.length > 0 ? header : bearer;
    if (!key || environmentOfKey(key) === null) return false;
    return this.keys.peek(hashKey(key))?.isActive === true;
  }

  private async fromKey(key: string, ip: string): Promise<Principal> {
    // Only the exact key shape is hashed and looked up: anything else costs no query and no cache entry.
    if (environmentOfKey(key) === null) throw unauthorized('Invalid API key');
    const k = await this.keys.get(hashKey(key));
    if (!k || !k.isActive) throw unauthorized('Invalid API key');
    if (k.expiresAt !== null && k.expiresAt <= this.clock.now().getTime()) throw unauthorized('API key has expired');
    const org = await this.orgs.get(k.organizationId);
    if (!org) throw unauthorized('Invalid API key');
    if (!ipAllowed(ip, k.allow)) throw forbidden('Caller IP is not in the API key allowlist');
    if (!ipAllowed(ip, org.allow)) throw forbidden('Caller IP is not in the organization allowlist');
    if (org.allowedEnvironments.length > 0 && !org.allowedEnvironments.includes(k.environment)) {
      throw forbidden(`API keys of environment ${k.environment} are not allowed in this organization`);
    }
    this.usage.record(k.id);
    const agentKey = k.agentId !== null;
    return {
      kind: agentKey ? 'agent_key' : 'api_key',
      organizationId: k.organizationId,
      role: agentKey ? 'developer' : roleForScopes(k.scopes),
      scopes: new Set(k.scopes),
      userId: k.id,
      userName: `API key ${k.name}`,
      userEmail: null,
      keyId: k.id,
      ...(agentKey ? { agentId: k.agentId! } : {}),
    };
  }

  private async fromJwt(token: string, ip: string): Promise<Principal> {
    if (!this.jwks && !this.secret) throw unauthorized('Invalid credentials');
    const verifyOpts = {
      issuer: this.config.AUTH_JWT_ISSUER,
      audience: this.config.AUTH_JWT_AUDIENCE,
      requiredClaims: ['exp', 'sub'],
    };
    let payload: Record<string, unknown>;
    try {
      payload = this.secret
        ? (await jwtVerify(token, this.secret, { ...verifyOpts, algorithms: ['HS256'] })).payload
        : (await jwtVerify(token, this.jwks!, { ...verifyOpts, algorithms: [...JWKS_ALGORITHMS] })).payload;
    } catch {
      throw unauthorized('Invalid or expired token');
    }
    if (!lifetimeWithin(payload, this.config.AUTH_JWT_MAX_AGE_SECONDS, this.clock.now().getTime())) {
      throw unauthorized(`Token lifetime exceeds ${this.config.AUTH_JWT_MAX_AGE_SECONDS} seconds`);
    }
    const sub = typeof payload.sub === 'string' ? payload.sub : '';
    const orgId = typeof payload.org_id === 'string' ? payload.org_id : '';
    const role = payload.role as Role;
    // org_id is compared with a uuid column: anything but a real uuid would be a database error, not a 401.
    if (!sub || sub.length > 255 || !UUID_RE.test(orgId) || !ROLES.includes(role)) {
      throw unauthorized('Token lacks sub, org_id or a valid role');
    }
    const email = typeof payload.email === 'string' ? payload.email.slice(0, 320) : null;
    const name = typeof payload.name === 'string' ? payload.name.slice(0, 255) : null;
    // These are written to the users table, and Postgres cannot store NUL: such a token is malformed.
    if (NUL.test(sub) || (email !== null && NUL.test(email)) || (name !== null && NUL.test(name))) {
      throw unauthorized('Token claims contain NUL characters');
    }
    const org = await this.orgs.get(orgId.toLowerCase());
    if (!org) throw unauthorized('Unknown organization');
    if (!ipAllowed(ip, org.allow)) throw forbidden('Caller IP is not in the organization allowlist');
    const userId = await upsertUserFromToken(this.db, { organizationId: org.id, subject: sub, email, name, role });
    return {
      kind: 'user',
      organizationId: org.id,
      role,
      scopes: new Set(['agent:read', 'agent:write', 'trace:read', 'trace:write', 'policy:read', 'policy:write', 'analytics:read', 'admin']),
      userId,
      userName: name,
      userEmail: email,
    };
  }
}

/**
 * True when the token's `exp` is at most `maxSeconds` after its `iat` and after now: a token minted
 * to live for years is refused even though it verifies (docs/decisions.md, "Security hardening").
 */
export function lifetimeWithin(payload: { exp?: unknown; iat?: unknown }, maxSeconds: number, nowMs = Date.now()): boolean {
  if (typeof payload.exp !== 'number') return false;
  const now = Math.floor(nowMs / 1000);
  if (payload.exp - now > maxSeconds) return false;
  return typeof payload.iat !== 'number' || payload.exp - payload.iat <= maxSeconds;
}

/** Checks a principal against what the route demands; throws 403. */
export function authorize(p: Principal, need: RouteAuth, method: string) {
  if (p.kind === 'agent_key' && !need.agentKeys) throw forbidden('Agent-scoped keys cannot use this route');
  const role = need.role ?? (method === 'GET' || method === 'HEAD' ? 'viewer' : 'developer');
  const effective: Role = need.scope === 'admin' ? 'admin' : role;
  if (!roleAtLeast(p.role, effective)) throw forbidden(`Requires role ${effective}`);
  if (need.scope && !p.scopes.has(need.scope)) throw forbidden(`Requires scope ${need.scope}`);
}

/** Throws naming every route whose `config.auth` declares neither a scope, `anyPrincipal` nor `public`. */
export function assertRoutesDeclareAccess(routes: readonly Pick<RouteOptions, 'method' | 'url' | 'config'>[]) {
  const undeclared = routes
    .filter((r) => !declaresAccess((r.config as { auth?: RouteAuth } | undefined)?.auth))
    .map((r) => `${[r.method].flat().join(',')} ${r.url}`);
  if (undeclared.length > 0) {
    throw new Error(
      `Routes without an access declaration (config.auth needs scope, anyPrincipal or public): ${[...new Set(undeclared)].join('; ')}`,
    );
  }
}

/**
 * Installs the hook. Deny by default: every route must declare its access (checked when the app
 * becomes ready, so the app refuses to start otherwise); routes without `public` need a credential.
 */
export function registerAuth(app: FastifyInstance, deps: { auth: Authenticator; state: SharedState; config: Config; clock?: Clock }) {
  const clock = deps.clock ?? systemClock;
  // Collected here and checked on ready, after every plugin (including later onRoute hooks that
  // mark the API docs public) has had its say.
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => void routes.push(route));
  app.addHook('onReady', async () => assertRoutesDeclareAccess(routes));

  const limits = {
    control: deps.config.RATE_LIMIT_CONTROL_PER_MINUTE,
    ingest: deps.config.RATE_LIMIT_INGEST_PER_MINUTE,
    enforce: deps.config.ENFORCEMENT_RATE_LIMIT_PER_MINUTE,
  };
  const failures = new AuthFailureLimit(deps.state, deps.config.RATE_LIMIT_AUTH_FAILURES_PER_MINUTE, clock);
  app.addHook('onRequest', async (request, reply) => {
    // Unmatched routes fall through to the 404 handler.
    if (!request.routeOptions.url) return;
    const need = request.routeOptions.config.auth;
    // Fail closed: the start-up check makes this unreachable, unless a route escaped it.
    if (!need || !declaresAccess(need)) throw forbidden('This route declares no access');
    if (need.public) return;
    failures.refuseIfBlocked(request.ip, reply, () => deps.auth.holdsKnownKey(request));
    let principal: Principal;
    try {
      principal = await deps.auth.authenticate(request);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'UNAUTHORIZED') await failures.count(request, reply);
      throw err;
    }
    request.principal = principal;
    authorize(principal, need, request.method);

    const cls = need.rateLimit ?? 'control';
    if (cls === false) return;
    const limit = limits[cls];
    const now = clock.now().getTime();
    let hit;
    try {
      hit = await deps.state.hit(`${cls}:${principal.organizationId}`, 60_000, now);
    } catch (err) {
      // Fail open: a cache outage must not take the API down; the health check reports it.
      request.log.warn({ err }, 'rate limiter unavailable; request allowed');
      return;
    }
    const resetSeconds = limitHeaders(reply, limit, hit, now);
    if (hit.count > limit) {
      throw rateLimited(`Rate limit of ${limit} requests per minute exceeded`, resetSeconds);
    }
  });
}

/** Sets the X-RateLimit-* headers of a window and answers the seconds until it resets. */
function limitHeaders(reply: FastifyReply, limit: number, hit: WindowCount, now: number) {
  const resetSeconds = Math.max(1, Math.ceil((hit.resetAt - now) / 1000));
  reply.header('X-RateLimit-Limit', limit);
  reply.header('X-RateLimit-Remaining', Math.max(0, limit - hit.count));
  reply.header('X-RateLimit-Reset', resetSeconds);
  return resetSeconds;
}

// Client IPs remembered as over the failure limit, per instance (docs/decisions.md, "Failed authentication per IP").
const MAX_BLOCKED_IPS = 10_000;

/**
 * Failed authentications per client IP (docs/decisions.md, "Failed authentication per IP"): each
 * 401 counts in the shared state; past the limit the IP is refused with 429 for the rest of the
 * window, before any credential lookup, from a local list, so a flood costs no lookup and no round trip.
 * A key the instance already holds as valid still passes (it costs no lookup), so a flood from a shared
 * address (a NAT, a proxy without TRUST_PROXY) does not lock out the clients already working through it.
 */
class AuthFailureLimit {
  private blocked = new LRUCache<string, number>({ max: MAX_BLOCKED_IPS });

  constructor(private state: SharedState, private limit: number, private clock: Clock) {}

  /**
   * Throws 429 when this IP went over the limit in the current window, unless `exempt()` (asked only
   * then, so an unblocked request pays nothing for it).
   */
  refuseIfBlocked(ip: string, reply: FastifyReply, exempt: () => boolean) {
    if (this.limit === 0) return;
    const until = this.blocked.get(ip);
    if (until === undefined) return;
    const now = this.clock.now().getTime();
    if (until <= now) {
      this.blocked.delete(ip);
      return;
    }
    if (exempt()) return;
    const resetSeconds = limitHeaders(reply, this.limit, { count: this.limit + 1, resetAt: until }, now);
    throw rateLimited(`Too many failed authentications from this address: more than ${this.limit} per minute`, resetSeconds);
  }

  /** Counts one failed authentication of the request's IP; throws 429 instead of the 401 past the limit. */
  async count(request: FastifyRequest, reply: FastifyReply) {
    if (this.limit === 0) return;
    const now = this.clock.now().getTime();
    let hit: WindowCount;
    try {
      hit = await this.state.hit(`authfail:${request.ip}`, 60_000, now);
    } catch (err) {
      // Fail open, as the per-organization limit: the 401 stands.
      request.log.warn({ err }, 'rate limiter unavailable; failed authentication not counted');
      return;
    }
    const resetSeconds = limitHeaders(reply, this.limit, hit, now);
    if (hit.count > this.limit) {
      this.blocked.set(request.ip, hit.resetAt);
      throw rateLimited(`Too many failed authentications from this address: more than ${this.limit} per minute`, resetSeconds);
    }
  }
}
