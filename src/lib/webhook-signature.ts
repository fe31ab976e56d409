/**
 * Webhook signatures, both sides (docs/decisions.md, "Webhooks"). Pure functions on node:crypto, so
 * the receiving side (src/webhooks-verify.ts) can be imported without the service.
 *
 * - `X-Service-Signature: sha256=<hex>`: HMAC-SHA256 keyed with the decoded secret; v2 signs
 *   `<timestamp>.<body>` (timestamp in `X-Service-Timestamp`), v1 the body alone.
 * - Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>` over
 *   `<id>.<timestamp>.<body>`, verifiable with the `standardwebhooks` or `svix` libraries.
 * - During a secret rotation's grace period both headers carry one signature per secret, space-separated.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export type SignatureVersion = 'v1' | 'v2';

/** The prefix of every signing secret. */
export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` + base64 of 32 random bytes (contract.md "Events"). */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** True when `secret` is `whsec_` + canonical base64 of 24 to 64 bytes (a secret a user may bring). */
export function isSigningSecret(secret: string): boolean {
  if (!secret.startsWith(SECRET_PREFIX)) return false;
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return false;
  const n = Buffer.from(b64, 'base64').length;
  return n >= 24 && n <= 64;
}

/** The HMAC key of a secret: the bytes its base64 part decodes to (a secret without the prefix is used as base64 too). */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text, 'utf8');

export interface SignInput {
  /** The exact bytes sent (the outbox body). */
  body: string;
  /** The event id (`webhook-id`). */
  eventId: string;
  /** `X-Service-Idempotency-Key`; absent for calls that are not events (custom validators). */
  idempotencyKey?: string;
  /** Current secret first, then the previous one while its grace period lasts. */
  secrets: readonly string[];
  version: SignatureVersion;
  /** Signing time, Unix seconds. */
  timestamp: number;
}

/** The signature and identification headers of one signed call: webhook deliveries, channel webhooks, custom validators. */
export function signatureHeaders(input: SignInput): Record<string, string> {
  const keys = input.secrets.map(secretKey);
  const ts = String(input.timestamp);
  const serviceSigned = input.version === 'v2' ? `${ts}.${input.body}` : input.body;
  const standardSigned = `${input.eventId}.${ts}.${input.body}`;
  const headers: Record<string, string> = {
    'X-Service-Signature': keys.map((k) => `sha256=${hmac(k, serviceSigned).digest('hex')}`).join(' '),
    'X-Service-Signature-Version': input.version,
    'webhook-id': input.eventId,
    'webhook-timestamp': ts,
    'webhook-signature': keys.map((k) => `v1,${hmac(k, standardSigned).digest('base64')}`).join(' '),
  };
  if (input.version === 'v2') headers['X-Service-Timestamp'] = ts;
  if (input.idempotencyKey !== undefined) headers['X-Service-Idempotency-Key'] = input.idempotencyKey;
  return headers;
}

/** Why a delivery was refused by verifyWebhook. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function headerOf(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : bag[key];
  return Array.isArray(v) ? v.join(' ') : v;
}

/** Constant-time comparison of two byte strings (false when their lengths differ). */
function same(a: Buffer, b: Buffer) {
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface VerifyOptions {
  /** Largest accepted distance between the signing timestamp and now (default 300 s, either side). */
  toleranceSeconds?: number;
  /** The current time (default Date.now()), for tests. */
  now?: Date;
}

/** The verified delivery: its parsed body and how it was signed. */
export interface VerifiedWebhook<T = unknown> {
  payload: T;
  scheme: 'x-service-v1' | 'x-service-v2' | 'standard-webhooks';
  eventId?: string;
  idempotencyKey?: string;
  timestamp?: number;
}

function checkTimestamp(raw: string | undefined, opts: VerifyOptions): number {
  if (!raw || !/^\d{1,12}$/.test(raw)) throw new WebhookVerificationError('missing or malformed timestamp');
  const ts = Number(raw);
  const now = Math.floor((opts.now?.getTime() ?? Date.now()) / 1000);
  if (Math.abs(now - ts) > (opts.toleranceSeconds ?? 300)) throw new WebhookVerificationError('timestamp outside the tolerance window');
  return ts;
}

/**
 * Verifies a delivery on the receiving side: `rawBody` exactly as received (not re-serialized JSON),
 * its headers, and the signing secret (or several, while you roll a secret). X-Service headers are
 * checked when present (v2: signature over `timestamp.body` and the replay window; v1: over the body,
 * which has no timestamp to check), else the Standard Webhooks headers. Any signature in the header
 * matching any secret passes; comparisons are constant-time. Throws WebhookVerificationError.
 */
export function verifyWebhook<T = unknown>(rawBody: string | Buffer, headers: HeaderBag, secret: string | readonly string[], opts: VerifyOptions = {}): VerifiedWebhook<T> {
  const body = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8');
  const keys = (typeof secret === 'string' ? [secret] : [...secret]).map(secretKey);
  if (keys.length === 0 || keys.some((k) => k.length === 0)) throw new WebhookVerificationError('no secret to verify with');
  const parse = (): T => {
    try {
      return JSON.parse(body) as T;
    } catch {
      throw new WebhookVerificationError('the body is not JSON');
    }
  };

  const service = headerOf(headers, 'x-service-signature');
  if (service !== undefined) {
    const version = (headerOf(headers, 'x-service-signature-version') ?? 'v1').trim();
    if (version !== 'v1' && version !== 'v2') throw new WebhookVerificationError(`unknown signature version ${version}`);
    const ts = version === 'v2' ? checkTimestamp(headerOf(headers, 'x-service-timestamp'), opts) : undefined;
    const signed = version === 'v2' ? `${ts}.${body}` : body;
    const given = service.split(/[\s,]+/).filter((s) => s.startsWith('sha256=')).map((s) => Buffer.from(s.slice(7), 'hex'));
    const ok = keys.some((k) => {
      const expected = hmac(k, signed).digest();
      return given.some((g) => same(g, expected));
    });
    if (!ok) throw new WebhookVerificationError('no matching signature');
    return { payload: parse(), scheme: version === 'v2' ? 'x-service-v2' : 'x-service-v1', timestamp: ts, idempotencyKey: headerOf(headers, 'x-service-idempotency-key') };
  }

  const id = headerOf(headers, 'webhook-id');
  const standard = headerOf(headers, 'webhook-signature');
  if (id === undefined || standard === undefined) throw new WebhookVerificationError('missing signature headers');
  const ts = checkTimestamp(headerOf(headers, 'webhook-timestamp'), opts);
  const signed = `${id}.${ts}.${body}`;
  const given = standard.split(' ').filter((s) => s.startsWith('v1,')).map((s) => Buffer.from(s.slice(3), 'base64'));
  const ok = keys.some((k) => {
    const expected = hmac(k, signed).digest();
    return given.some((g) => same(g, expected));
  });
  if (!ok) throw new WebhookVerificationError('no matching signature');
  return { payload: parse(), scheme: 'standard-webhooks', eventId: id, timestamp: ts, idempotencyKey: headerOf(headers, 'x-service-idempotency-key') };
}
