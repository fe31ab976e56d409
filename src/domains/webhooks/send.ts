/**
 * One signed POST to a webhook's URL through the outbound guard (src/lib/outbound.ts), and how its
 * outcome counts (docs/decisions.md, "Webhooks": 2xx succeeds; 3xx, 4xx, 5xx and no answer fail; 410
 * stops; 429 retries after Retry-After).
 */
import { OutboundError, type OutboundErrorKind } from '../../lib/outbound.js';
import { postSigned, type SigningSettings } from '../../lib/signed-post.js';
import type { WebhookRow } from './service.js';

/** `User-Agent` of every delivery. */
export const USER_AGENT = 'agent-governance-webhooks/1.0.0';
/** Response bytes kept on a delivery row (the transfer is cut there). */
export const RESPONSE_BODY_CAP = 4096;

/** The signature version and outbound rule in force (the shared signed POST's settings). */
export type SendSettings = SigningSettings;

export interface SendOutcome {
  success: boolean;
  statusCode: number | null;
  statusText: string;
  responseBody: string | null;
  /** Null on success. Names no payload, so it may be stored and shown. */
  errorMessage: string | null;
  errorKind: OutboundErrorKind | 'http_status' | null;
  /** 410 Gone: the receiver asked us to stop. */
  gone: boolean;
  /** Seconds asked by a 429's Retry-After, when readable. */
  retryAfterSeconds: number | null;
  durationMs: number;
}

/** The secrets that sign now: the current one, and the previous one while its grace period lasts. */
export function signingSecrets(hook: Pick<WebhookRow, 'secret' | 'previousSecret' | 'previousSecretExpiresAt'>, now: Date): string[] {
  const prev = hook.previousSecret && hook.previousSecretExpiresAt && hook.previousSecretExpiresAt > now ? [hook.previousSecret] : [];
  return [hook.secret, ...prev];
}

/** Retry-After as seconds (delta-seconds or an HTTP date), or null. */
export function retryAfterSeconds(value: string | string[] | undefined, now: Date): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : Math.max(0, Math.ceil((t - now.getTime()) / 1000));
}

/** Signs and sends `body` to the webhook; never throws for the receiver's sake. */
export async function sendSigned(
  hook: Pick<WebhookRow, 'url' | 'customHeaders' | 'timeoutSeconds' | 'secret' | 'previousSecret' | 'previousSecretExpiresAt'>,
  msg: { body: string; eventId: string; idempotencyKey: string },
  settings: SendSettings,
  now: Date,
): Promise<SendOutcome> {
  const started = performance.now();
  try {
    // Custom headers: the schema refuses the reserved names, and ours are written after anyway.
    const res = await postSigned(
      { url: hook.url, body: msg.body, eventId: msg.eventId, idempotencyKey: msg.idempotencyKey, secrets: signingSecrets(hook, now), customHeaders: hook.customHeaders, userAgent: USER_AGENT, timeoutMs: hook.timeoutSeconds * 1000, maxResponseBytes: RESPONSE_BODY_CAP },
      settings,
      now,
    );
    const ok = res.status >= 200 && res.status < 300;
    const redirect = res.status >= 300 && res.status < 400;
    return {
      success: ok,
      statusCode: res.status,
      statusText: res.statusText,
      responseBody: res.body,
      errorMessage: ok ? null : redirect ? `HTTP ${res.status}: redirects are not followed` : `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`,
      errorKind: ok ? null : 'http_status',
      gone: res.status === 410,
      retryAfterSeconds: res.status === 429 ? retryAfterSeconds(res.headers['retry-after'], now) : null,
      durationMs: Math.round(res.durationMs),
    };
  } catch (err) {
    const e = err instanceof OutboundError ? err : new OutboundError('network', 'network error');
    return {
      success: false,
      statusCode: null,
      statusText: '',
      responseBody: null,
      errorMessage: `${e.kind}: ${e.message}`,
      errorKind: e.kind,
      gone: false,
      retryAfterSeconds: null,
      durationMs: Math.round(performance.now() - started),
    };
  }
}
