/**
 * The receiving side of our webhooks, importable on its own (package export `agent-governance/webhooks`):
 * `verifyWebhook(rawBody, headers, secret, { toleranceSeconds = 300 })`. See the README, "Verifying webhooks".
 */
export { verifyWebhook, WebhookVerificationError, type HeaderBag, type VerifiedWebhook, type VerifyOptions } from './lib/webhook-signature.js';
