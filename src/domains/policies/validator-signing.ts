/**
 * Custom validator calls are signed like webhook deliveries (contract.md, "Events"): a per-policy
 * secret `whsec_` + base64 of 32 random bytes, and both HMAC-SHA256s keyed with its decoded bytes:
 * - `X-Service-Signature: sha256=<hex>` over `<timestamp>.<body>`, with `X-Service-Signature-Version: v2`
 *   and `X-Service-Timestamp` (seconds);
 * - Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>` over
 *   `<id>.<timestamp>.<body>` (verifiable with the `standardwebhooks` package).
 * Docs: docs/decisions.md, "Enforce route".
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new validator secret: `whsec_` + base64 of 32 random bytes. */
export const newValidatorSecret = () => PREFIX + randomBytes(32).toString('base64');

/** Whether a custom policy's ruleDefinition calls a validator (and so needs a secret). */
export const callsValidator = (policyType: string, rule: unknown) =>
  policyType === 'custom' && typeof rule === 'object' && rule !== null && typeof (rule as { validatorUrl?: unknown }).validatorUrl === 'string';

/** The headers of one signed call of `body` at `now`; `id` is the message id (a fresh uuid by default). */
export function signValidatorCall(secret: string, body: string, now: Date, id: string = randomUUID()): Record<string, string> {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  const ts = String(Math.floor(now.getTime() / 1000));
  const service = createHmac('sha256', key).update(`${ts}.${body}`).digest('hex');
  const standard = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  return {
    'x-service-signature': `sha256=${service}`,
    'x-service-signature-version': 'v2',
    'x-service-timestamp': ts,
    'webhook-id': id,
    'webhook-timestamp': ts,
    'webhook-signature': `v1,${standard}`,
  };
}
