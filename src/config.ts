/**
 * Every environment variable the service reads, parsed and documented in one place.
 * The README's configuration table mirrors this file.
 */
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .optional()
    .transform((v) => (v === undefined ? def : ['true', '1', 'yes'].includes(v)));

const int = (def: number, min = 1, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number().int().min(min).max(max).default(def);

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

// Names proxy-addr (Fastify's trustProxy) understands besides addresses and CIDR ranges.
const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY: `false` (default), `true` (every hop: refused in production), a hop count, or a
 * comma-separated list of proxy addresses/CIDRs, as Fastify's trustProxy takes them.
 */
const trustProxy = z
  .string()
  .optional()
  .transform((v, ctx): boolean | number | string[] => {
    const s = (v ?? '').trim();
    if (s === '' || ['false', '0', 'no'].includes(s)) return false;
    if (s === 'true') return true;
    if (/^\d+$/.test(s)) return Number(s);
    const entries = s.split(',').map((e) => e.trim()).filter((e) => e !== '');
    for (const e of entries) {
      const ok = PROXY_NAMES.has(e) || (e.includes('/') ? ipaddr.isValidCIDR(e) : ipaddr.isValid(e));
      if (!ok) ctx.addIssue({ code: 'custom', message: `"${e}" is not a hop count, an IP address, a CIDR range or loopback/linklocal/uniquelocal` });
    }
    return entries;
  });

const schema = z.object({
  NODE_ENV: z.string().default('development'),
  /** Where the API listens. */
  PORT: int(3000, 0, 65535),
  HOST: z.string().default('0.0.0.0'),
  /** Embedded PGlite database directory, used when DATABASE_URL is unset. */
  DATA_DIR: z.string().default('./data'),
  /** PostgreSQL connection string; switches from PGlite to PostgreSQL. */
  DATABASE_URL: optionalString,
  /** Pool size for PostgreSQL. */
  DATABASE_POOL_SIZE: int(10, 1, 200),
  /** Redis for rate limits, shared counters and cache-invalidation pub/sub. */
  REDIS_URL: optionalString,
  /** Headless first start: create this organization and admin key when the database is empty. */
  AGOV_INIT_ORG_NAME: optionalString,
  AGOV_INIT_ADMIN_KEY: optionalString,
  /** Requests per minute per organization, by route class. */
  RATE_LIMIT_CONTROL_PER_MINUTE: int(100),
  RATE_LIMIT_INGEST_PER_MINUTE: int(1000),
  ENFORCEMENT_RATE_LIMIT_PER_MINUTE: int(10000),
  /** Failed authentications per minute per client IP before that IP is refused for the rest of the minute; 0 turns it off. */
  RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: int(60, 0),
  /** JWT verification for dashboard users: one of JWKS URL or HS256 secret, with issuer and audience. */
  AUTH_JWKS_URL: optionalString,
  AUTH_JWT_SECRET: optionalString,
  AUTH_JWT_ISSUER: optionalString,
  AUTH_JWT_AUDIENCE: optionalString,
  /** Longest accepted token lifetime: `exp` at most this far after `iat` (or after now without `iat`). */
  AUTH_JWT_MAX_AGE_SECONDS: int(24 * 3600, 60, 30 * 24 * 3600),
  /** Which X-Forwarded-For hops to trust (needed for IP allowlists behind a load balancer). */
  TRUST_PROXY: trustProxy,
  /** Largest accepted request body in bytes. */
  BODY_LIMIT_BYTES: int(1024 * 1024, 1024),
  /** Outbound calls to loopback/private addresses (webhooks, validators). */
  ALLOW_PRIVATE_TARGETS: z.enum(['true', 'false', '1', '0']).optional(),
  /** The processing service (anomaly, RCA, forecast). */
  PROCESSING_URL: optionalString,
  PROCESSING_PORT: int(3001, 0, 65535),
  PROCESSING_TOKEN: optionalString,
  /** The SMTP relay of email notification channels: smtp://user:pass@host:587 or smtps://…:465 (unset: email channels fail their deliveries). */
  SMTP_URL: optionalString,
  /** The From address of notification emails. */
  SMTP_FROM: z.string().min(3).default('Agent Governance <notifications@localhost>'),
  /** Where pagerduty channels send events (PagerDuty's Events API v2; tests point it at a local server). */
  PAGERDUTY_EVENTS_URL: z.url().default('https://events.pagerduty.com/v2/enqueue'),
  /** Deadline of one notification delivery (and of POST /notification-channels/{id}/test). */
  NOTIFICATION_TIMEOUT_MS: int(10_000, 100, 60_000),
  /** A JSON price table replacing the shipped one (same shape as src/domains/traces/prices.json). */
  PRICE_TABLE_PATH: optionalString,
  /** GET /traces counts matches exactly up to this many (PostgreSQL's estimate); beyond, it answers the estimate. */
  TRACE_COUNT_EXACT_LIMIT: int(10_000, 0),
  /** Traces older than this many days (by their timestamp) are deleted by the retention job; 0 keeps them forever. */
  TRACE_RETENTION_DAYS: int(0, 0, 36_500),
  /** Policy decision rows (GET /policies/decisions) older than this many days are deleted by the retention job; 0 keeps them forever. */
  DECISION_RETENTION_DAYS: int(90, 0, 36_500),
  /** Processed outbox events older than this many days are deleted by the retention job (pending ones never); 0 keeps them forever. */
  OUTBOX_RETENTION_DAYS: int(7, 0, 36_500),
  /** Largest accepted body of POST /traces/ingest (100 items with large inputs/outputs). */
  INGEST_BODY_LIMIT_BYTES: int(32 * 1024 * 1024, 1024),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** How long an authenticated API key stays cached before it is read again (invalidation is immediate on change). */
  AUTH_CACHE_TTL_SECONDS: int(30, 0, 3600),
  /** How often buffered API key usage (lastUsedAt, usageCount) is written. */
  USAGE_FLUSH_INTERVAL_MS: int(5000, 100),
  /** How often each API instance writes its buffered policy decisions and counters (docs/decisions.md, "Decision log and policy stats"). */
  DECISIONS_FLUSH_INTERVAL_MS: int(1000, 50, 600_000),
  /** Ed25519 private key for audit checkpoints: PKCS#8 PEM, or a path to a file holding one (unset: generated into DATA_DIR). */
  AUDIT_SIGNING_KEY: optionalString,
  /** A checkpoint of an organization's chain head after this many new entries... */
  AUDIT_CHECKPOINT_EVERY: int(1000),
  /** ...or this long after the last one when the head moved at all. */
  AUDIT_CHECKPOINT_INTERVAL_SECONDS: int(60),
  /** What this process runs: the API, the jobs and schedules, or both (docs/decisions.md, "Process roles"). */
  AGOV_ROLE: z.enum(['all', 'api', 'worker']).default('all'),
  /** How often the job runner looks for due jobs when nothing woke it. */
  JOBS_POLL_INTERVAL_MS: int(1000, 10, 60_000),
  /** Job handlers running at once in one process. */
  JOBS_CONCURRENCY: int(10, 1, 1000),
  /** Webhook signature scheme: v2 signs `timestamp.body`; v1 (the body alone) only while a receiver rolls out v2. */
  WEBHOOK_SIGNATURE_VERSION: z.enum(['v1', 'v2']).default('v2'),
  /** After a secret rotation, deliveries are signed with the old and the new secret for this long. */
  WEBHOOK_SECRET_GRACE_SECONDS: int(86_400, 0, 30 * 86_400),
  /** Finished webhook messages and their delivery attempts are deleted this many days after their last change; 0 keeps them forever. */
  WEBHOOK_RETENTION_DAYS: int(30, 0, 36_500),
  /** Sunset date announced on the deprecated /api/... alias. */
  API_ALIAS_SUNSET: z.string().default('2027-06-30'),
});

export type Config = ReturnType<typeof parseConfig>;

/** Parses and validates the environment; throws with a readable message on a bad value. */
export function parseConfig(env: Record<string, string | undefined> = process.env) {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = result.data;
  // PGlite is one process's database: the API and the worker can only be split over PostgreSQL.
  if (c.AGOV_ROLE !== 'all' && !c.DATABASE_URL) {
    throw new Error(
      `Invalid configuration:\n  AGOV_ROLE: "${c.AGOV_ROLE}" needs DATABASE_URL (PostgreSQL); the embedded PGlite database serves one process, so leave AGOV_ROLE unset (all) to run the API and the jobs together`,
    );
  }
  const production = c.NODE_ENV === 'production';
  const problems = startupProblems(c, production);
  if (problems.length > 0) throw new Error(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  return {
    ...c,
    production,
    allowPrivateTargets:
      c.ALLOW_PRIVATE_TARGETS === undefined ? !production : ['true', '1'].includes(c.ALLOW_PRIVATE_TARGETS),
  };
}

/** Combinations of settings that are each valid but unsafe together (docs/decisions.md, "Security hardening"). */
function startupProblems(c: z.infer<typeof schema>, production: boolean): string[] {
  const out: string[] = [];
  if (production && c.TRUST_PROXY === true) {
    out.push(
      'TRUST_PROXY: "true" trusts every X-Forwarded-For hop, so a client can forge its address past IP allowlists; ' +
        'in production set the number of proxies in front (e.g. 1) or their addresses/CIDRs (e.g. 10.0.0.0/8)',
    );
  }
  return [...out, ...jwtConfigProblems(c)];
}

type JwtSettings = Pick<z.infer<typeof schema>, 'AUTH_JWT_SECRET' | 'AUTH_JWKS_URL' | 'AUTH_JWT_ISSUER' | 'AUTH_JWT_AUDIENCE'>;

/** What is unsafe in the JWT settings (empty when fine); parseConfig and the Authenticator both refuse them. */
export function jwtConfigProblems(c: JwtSettings): string[] {
  const out: string[] = [];
  if (c.AUTH_JWT_SECRET && c.AUTH_JWKS_URL) {
    out.push('AUTH_JWT_SECRET and AUTH_JWKS_URL are both set: set only one (HS256 secret or the identity provider\'s JWKS)');
  }
  if (c.AUTH_JWT_SECRET && Buffer.byteLength(c.AUTH_JWT_SECRET, 'utf8') < 32) {
    out.push('AUTH_JWT_SECRET: must be at least 32 bytes (HS256 needs a key as long as its hash)');
  }
  if ((c.AUTH_JWT_SECRET || c.AUTH_JWKS_URL) && (!c.AUTH_JWT_ISSUER || !c.AUTH_JWT_AUDIENCE)) {
    out.push('AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE are required when JWT authentication (AUTH_JWT_SECRET or AUTH_JWKS_URL) is configured');
  }
  return out;
}
