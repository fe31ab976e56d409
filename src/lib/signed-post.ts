/**
 * One signed POST through the outbound guard: the single way webhook deliveries, their test sends and
 * notification channels of type webhook call a receiver (docs/decisions.md, "Webhooks" and "One
 * signed POST for webhooks and channel webhooks").
 */
import { sendOutbound, type OutboundResponse } from './outbound.js';
import { signatureHeaders, type SignatureVersion } from './webhook-signature.js';

/** How every signed call is signed and where it may go: from the configuration (WEBHOOK_SIGNATURE_VERSION, private targets). */
export interface SigningSettings {
  version: SignatureVersion;
  allowPrivate: boolean;
}

/** One signed POST: where, what, the signing secrets and the caller's own headers. */
export interface SignedPost {
  url: string;
  /** The exact bytes sent and signed. */
  body: string;
  eventId: string;
  idempotencyKey: string;
  /** Current secret first, then the previous one while its grace period lasts. */
  secrets: readonly string[];
  /** Written first, so ours (content type, user agent, signatures) win over a custom header of the same name. */
  customHeaders?: Record<string, string>;
  userAgent: string;
  timeoutMs: number;
  maxResponseBytes: number;
}

/** POSTs `p.body` signed at `now` (the injected clock's) with the configured version; throws OutboundError as sendOutbound does. */
export function postSigned(p: SignedPost, settings: SigningSettings, now: Date): Promise<OutboundResponse> {
  const headers = {
    ...p.customHeaders,
    'Content-Type': 'application/json',
    'User-Agent': p.userAgent,
    ...signatureHeaders({ body: p.body, eventId: p.eventId, idempotencyKey: p.idempotencyKey, secrets: p.secrets, version: settings.version, timestamp: Math.floor(now.getTime() / 1000) }),
  };
  return sendOutbound({ url: p.url, method: 'POST', headers, body: p.body, timeoutMs: p.timeoutMs, maxResponseBytes: p.maxResponseBytes, allowPrivate: settings.allowPrivate });
}
