/**
 * One delivery of a message to one channel: email over SMTP (nodemailer), a Slack incoming-webhook
 * payload, a PagerDuty Events API v2 event, a signed generic webhook. HTTP targets go through the
 * outbound guard (src/lib/outbound.ts) only. A failure says whether retrying can help (per target,
 * docs/decisions.md "Notification channels"); nothing here throws, and no message names a payload
 * or a secret.
 */
import nodemailer, { type Transporter } from 'nodemailer';
import type { Config } from '../../config.js';
import type { Clock } from '../../core/clock.js';
import { OutboundError, sendOutbound, type OutboundResponse } from '../../lib/outbound.js';
import { postSigned } from '../../lib/signed-post.js';
import { eventEnvelope } from '../events/outbox.js';
import type { EmailConfiguration, PagerDutyConfiguration, SlackConfiguration, WebhookConfiguration } from './configuration.js';
import type { NotificationMessage } from './schemas.js';

export type DeliveryOutcome =
  | { ok: true; statusCode?: number }
  | { ok: false; permanent: boolean; statusCode?: number; kind: string; message: string };

/** A channel as the sender needs it (configuration in full, as stored). */
export interface DeliveryTarget {
  id: string;
  organizationId: string;
  channelType: string;
  configuration: Record<string, unknown>;
}

/** Fixed for a logical message: the same across retries (the webhook's id and body, so its idempotency key). */
export interface Envelope {
  id: string;
  createdAt: string;
}

export type SenderConfig = Pick<Config, 'SMTP_URL' | 'SMTP_FROM' | 'PAGERDUTY_EVENTS_URL' | 'NOTIFICATION_TIMEOUT_MS' | 'WEBHOOK_SIGNATURE_VERSION' | 'allowPrivateTargets'>;

const USER_AGENT = 'AgentGovernance-Notifications/1.0';
/** Response bytes read from a channel's target (the answer is not kept). */
const RESPONSE_BYTES = 4096;

/** Sends notifications for one configuration (one SMTP transport per process, made on first use; it opens a connection per message and keeps none). */
export class Sender {
  private mailer: Transporter | undefined;

  /** `clock` signs channel webhooks (their timestamp), as webhook deliveries are signed. */
  constructor(
    private readonly config: SenderConfig,
    private readonly clock: Clock,
  ) {}

  /** Delivers `message` to `target`; answers the outcome (never throws). */
  async deliver(target: DeliveryTarget, message: NotificationMessage, envelope: Envelope): Promise<DeliveryOutcome> {
    try {
      switch (target.channelType) {
        case 'email':
          return await this.email(target.configuration as EmailConfiguration, message);
        case 'slack':
          return await this.http((target.configuration as SlackConfiguration).webhookUrl, slackBody(message), 'strict');
        case 'pagerduty':
          return await this.http(this.config.PAGERDUTY_EVENTS_URL, pagerDutyBody((target.configuration as PagerDutyConfiguration).routing_key, message), 'strict');
        case 'webhook':
          return await this.webhook(target, message, envelope);
        default:
          return { ok: false, permanent: true, kind: 'invalid_configuration', message: `unknown channel type ${target.channelType}` };
      }
    } catch (err) {
      // A bug in a sender must not kill the job runner's pass: report it as a retryable failure.
      return { ok: false, permanent: false, kind: 'internal', message: err instanceof Error ? err.name : 'unexpected error' };
    }
  }

  private http(url: string, body: string, policy: RetryPolicy): Promise<DeliveryOutcome> {
    return this.outcomeOf(
      () =>
        sendOutbound({
          url,
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT },
          timeoutMs: this.config.NOTIFICATION_TIMEOUT_MS,
          maxResponseBytes: RESPONSE_BYTES,
          allowPrivate: this.config.allowPrivateTargets,
        }),
      policy,
    );
  }

  /** The outcome of one outbound POST: a 2xx succeeds; refusals by the guard and answers are judged by `policy`. */
  private async outcomeOf(send: () => Promise<OutboundResponse>, policy: RetryPolicy): Promise<DeliveryOutcome> {
    let res: OutboundResponse;
    try {
      res = await send();
    } catch (err) {
      if (err instanceof OutboundError) {
        // A URL the guard refuses stays refused; everything else on the way may pass next time.
        const permanent = err.kind === 'invalid_url' || err.kind === 'private_target';
        return { ok: false, permanent, kind: err.kind, message: err.message };
      }
      throw err;
    }
    if (res.status >= 200 && res.status < 300) return { ok: true, statusCode: res.status };
    return { ok: false, permanent: isPermanent(res.status, policy), statusCode: res.status, kind: 'http_status', message: `the target answered ${res.status}` };
  }

  private webhook(target: DeliveryTarget, message: NotificationMessage, envelope: Envelope) {
    const c = target.configuration as WebhookConfiguration;
    // The body and idempotency key as for events (contract.md "Events"), fixed across retries.
    const { body, idempotencyKey } = eventEnvelope({
      id: envelope.id,
      type: 'notification',
      createdAt: envelope.createdAt,
      organizationId: target.organizationId,
      agentId: message.agentId ?? null,
      data: {
        channelId: target.id,
        dedupKey: message.dedupKey,
        action: message.action,
        severity: message.severity,
        title: message.title,
        body: message.body,
        link: message.link ?? null,
        data: message.data ?? null,
      },
    });
    // Signed as webhook deliveries are (one function): at the injected clock's now, with WEBHOOK_SIGNATURE_VERSION.
    const settings = { version: this.config.WEBHOOK_SIGNATURE_VERSION, allowPrivate: this.config.allowPrivateTargets };
    const post = { url: c.url, body, eventId: envelope.id, idempotencyKey, secrets: [c.secret], userAgent: USER_AGENT, timeoutMs: this.config.NOTIFICATION_TIMEOUT_MS, maxResponseBytes: RESPONSE_BYTES };
    return this.outcomeOf(() => postSigned(post, settings, this.clock.now()), 'webhook');
  }

  private async email(c: EmailConfiguration, message: NotificationMessage): Promise<DeliveryOutcome> {
    if (!this.config.SMTP_URL) {
      return { ok: false, permanent: false, kind: 'not_configured', message: 'SMTP_URL is not set: email channels cannot deliver' };
    }
    const timeout = this.config.NOTIFICATION_TIMEOUT_MS;
    // smtp:// upgrades with STARTTLS when the server offers it; smtps:// is TLS from the start.
    this.mailer ??= nodemailer.createTransport({ url: this.config.SMTP_URL, ...smtpTimeouts(timeout) }, { from: this.config.SMTP_FROM });
    try {
      // The deadline aborts the send itself (nodemailer closes the connection), rather than racing a
      // send that would carry on and deliver after we reported a timeout and queued a retry.
      await this.mailer.sendMail({ to: c.recipients, subject: emailSubject(message), text: emailText(message), signal: AbortSignal.timeout(timeout) });
      return { ok: true };
    } catch (err) {
      const e = err as { code?: string; responseCode?: number };
      // A 5xx SMTP reply (a refused recipient or sender) is final; 4xx replies and connection trouble are not.
      const permanent = typeof e.responseCode === 'number' && e.responseCode >= 500;
      const timedOut = e.code === 'ETIMEDOUT' || e.code === 'EABORT';
      const detail = [timedOut ? 'ETIMEDOUT' : e.code, e.responseCode].filter((x) => x !== undefined).join(' ');
      return { ok: false, permanent, kind: timedOut ? 'timeout' : 'smtp', message: `SMTP delivery failed${detail ? ` (${detail})` : ''}` };
    }
  }
}

/**
 * The SMTP transport's own timeouts, within the delivery deadline `timeoutMs`: connecting (DNS, TCP,
 * TLS and the greeting) and any silence of the server each get half of it, so a server that stops
 * answering is given up by nodemailer itself before the deadline aborts the send. What remains is
 * at-least-once: a server that accepted the message's data but answers after the deadline may deliver
 * it, and the retry sends it again (docs/decisions.md, "Notification channels: email deadline").
 */
export function smtpTimeouts(timeoutMs: number) {
  const half = Math.max(1, Math.floor(timeoutMs / 2));
  return { connectionTimeout: half, greetingTimeout: half, socketTimeout: half, dnsTimeout: half };
}

/**
 * `strict` (Slack, PagerDuty): 408, 429 and 5xx may pass later; any other answer (3xx, 4xx: a bad
 * URL, a revoked hook, a refused event) will not. `webhook`: as our webhooks, every non-2xx is
 * retried except 410 Gone.
 */
type RetryPolicy = 'strict' | 'webhook';

function isPermanent(status: number, policy: RetryPolicy): boolean {
  if (policy === 'webhook') return status === 410;
  return !(status === 408 || status === 429 || status >= 500);
}

const SEVERITY_EMOJI = { info: ':information_source:', warning: ':warning:', critical: ':rotating_light:' } as const;

/** Escapes the three characters Slack's mrkdwn treats as control characters. */
const slackEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** A Slack incoming-webhook payload: `text` (the notification's fallback) and blocks with title, severity and link. */
export function slackBody(m: NotificationMessage): string {
  const resolved = m.action === 'resolve';
  const headline = `${resolved ? 'Resolved' : m.severity.toUpperCase()}: ${m.title}`;
  const blocks: unknown[] = [
    { type: 'header', text: { type: 'plain_text', text: clip(headline, 150), emoji: true } },
  ];
  if (m.body) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: clip(slackEscape(m.body), 3000) } });
  const context = [`${resolved ? ':white_check_mark:' : SEVERITY_EMOJI[m.severity]} *Severity:* ${m.severity}`];
  if (m.agentId) context.push(`*Agent:* ${m.agentId}`);
  blocks.push({ type: 'context', elements: context.map((text) => ({ type: 'mrkdwn', text })) });
  if (m.link) blocks.push({ type: 'actions', elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open' }, url: m.link }] });
  return JSON.stringify({ text: slackEscape(clip(headline, 3000)), blocks });
}

/** A PagerDuty Events API v2 event: trigger with summary, severity and source; resolve with the same dedup_key. */
export function pagerDutyBody(routingKey: string, m: NotificationMessage): string {
  if (m.action === 'resolve') return JSON.stringify({ routing_key: routingKey, event_action: 'resolve', dedup_key: m.dedupKey });
  return JSON.stringify({
    routing_key: routingKey,
    event_action: 'trigger',
    dedup_key: m.dedupKey,
    payload: {
      summary: clip(m.title, 1024),
      severity: m.severity,
      source: m.agentId ? `agent:${m.agentId}` : 'agent-governance',
      custom_details: { body: m.body, ...(m.agentId ? { agentId: m.agentId } : {}), ...(m.data ? { data: m.data } : {}) },
    },
    ...(m.link ? { links: [{ href: m.link, text: 'Open' }] } : {}),
    client: 'Agent Governance',
  });
}

/** The subject of a notification email. */
export const emailSubject = (m: NotificationMessage) => `[${m.action === 'resolve' ? 'RESOLVED' : m.severity.toUpperCase()}] ${m.title}`.replace(/[\r\n]+/g, ' ');

/** The plain-text body of a notification email. */
export function emailText(m: NotificationMessage): string {
  const lines = [m.title, '', m.body, '', `Severity: ${m.severity}`];
  if (m.action === 'resolve') lines.push('Status: resolved');
  if (m.agentId) lines.push(`Agent: ${m.agentId}`);
  if (m.link) lines.push(`Link: ${m.link}`);
  return lines.join('\n');
}
