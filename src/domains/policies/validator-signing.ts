/**
 * Custom validator calls are signed like webhook deliveries (contract.md, "Events"), with the one
 * signer of src/lib/webhook-signature.ts and a per-policy secret (docs/decisions.md, "Enforce route").
 */
import { randomUUID } from 'node:crypto';
import { newSigningSecret, signatureHeaders } from '../../lib/webhook-signature.js';

/** A new validator secret: `whsec_` + base64 of 32 random bytes. */
export const newValidatorSecret = newSigningSecret;

/** Whether a custom policy's ruleDefinition calls a validator (and so needs a secret). */
export const callsValidator = (policyType: string, rule: unknown) =>
  policyType === 'custom' && typeof rule === 'object' && rule !== null && typeof (rule as { validatorUrl?: unknown }).validatorUrl === 'string';

/** The v2 and Standard Webhooks headers of one call of `body` at `now`; `id` is the message id (a fresh uuid by default). */
export function signValidatorCall(secret: string, body: string, now: Date, id: string = randomUUID()): Record<string, string> {
  return signatureHeaders({ body, eventId: id, secrets: [secret], version: 'v2', timestamp: Math.floor(now.getTime() / 1000) });
}
