/**
 * Signing of outbound webhook bodies (contract.md "Events"; the spec's webhook headers): our own
 * X-Service-Signature (v2: HMAC-SHA256 over `timestamp.body`) and the Standard Webhooks headers
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature`), so that receivers can verify with the
 * public `standardwebhooks` or `svix` libraries. Both HMACs are keyed with the decoded secret bytes.
 */
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new signing secret: `whsec_` + base64 of 32 random bytes (contract.md "Events"). */
export function newSigningSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

/** The key bytes of a `whsec_…` secret (base64 after the prefix). */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** True when `secret` is `whsec_` + canonical base64 of 24 to 64 bytes. */
export function isSigningSecret(secret: string): boolean {
  if (!secret.startsWith(PREFIX)) return false;
  const b64 = secret.slice(PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return false;
  const n = Buffer.from(b64, 'base64').length;
  return n >= 24 && n <= 64;
}

/**
 * The signature headers of one delivery of `body` (the exact bytes sent), message `id` (stable
 * across retries) signed at `timestampSeconds` (Unix seconds): v2 X-Service-* and Standard Webhooks.
 */
export function signPayload(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const key = secretKey(secret);
  const ts = String(Math.floor(timestampSeconds));
  const ours = createHmac('sha256', key).update(`${ts}.${body}`).digest('hex');
  const standard = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  return {
    'x-service-signature': `sha256=${ours}`,
    'x-service-signature-version': 'v2',
    'x-service-timestamp': ts,
    'webhook-id': id,
    'webhook-timestamp': ts,
    'webhook-signature': `v1,${standard}`,
  };
}
