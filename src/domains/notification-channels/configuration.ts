/**
 * `configuration` per `channelType` (contract.md "Other resources"): strict shapes (unknown keys
 * refused), validated when a channel is saved, and the masking of the secrets they hold
 * (docs/decisions.md, "Notification channels").
 */
import { z } from 'zod';
import { isPrivateHost, targetUrlProblem } from '../../lib/outbound.js';
import { isSigningSecret, newSigningSecret } from '../../lib/webhook-signature.js';

export const CHANNEL_TYPES = ['email', 'slack', 'pagerduty', 'webhook'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

export const MAX_RECIPIENTS = 50;
const MAX_URL_LENGTH = 2000;

/** What validation depends on: whether loopback and private targets are allowed (config allowPrivateTargets). */
export interface TargetRules {
  allowPrivate: boolean;
}

/** An outbound target URL: the outbound guard's creation-time check (src/lib/outbound.ts). */
const targetUrl = (rules: TargetRules) =>
  z
    .string()
    .max(MAX_URL_LENGTH)
    .superRefine((s, ctx) => {
      const p = targetUrlProblem(s, rules);
      if (p) ctx.addIssue({ code: 'custom', message: p });
    });

/**
 * A Slack incoming-webhook URL: https (it carries the secret in its path). Any host: Slack-compatible
 * receivers (Mattermost, Rocket.Chat) take the same payload. Plain http only to a loopback or private
 * host, and only where private targets are allowed (local development and tests).
 */
const slackUrl = (rules: TargetRules) =>
  targetUrl(rules).superRefine((s, ctx) => {
    let u: URL;
    try {
      u = new URL(s);
    } catch {
      return; // reported by targetUrl
    }
    if (u.protocol !== 'https:' && !(rules.allowPrivate && isPrivateHost(u))) ctx.addIssue({ code: 'custom', message: 'must use https' });
  });

const schemasFor = (rules: TargetRules) => ({
  email: z.strictObject({
    recipients: z.array(z.email().max(254)).min(1).max(MAX_RECIPIENTS),
  }),
  slack: z.strictObject({ webhookUrl: slackUrl(rules) }),
  pagerduty: z.strictObject({
    routing_key: z.string().regex(/^[A-Za-z0-9]{32}$/, 'must be the 32-character integration key of a PagerDuty Events API v2 integration'),
  }),
  webhook: z.strictObject({
    url: targetUrl(rules),
    secret: z.string().max(200).refine(isSigningSecret, 'must be whsec_ followed by the base64 of 24 to 64 bytes').optional(),
  }),
});

const cached = { open: schemasFor({ allowPrivate: true }), guarded: schemasFor({ allowPrivate: false }) };

export type EmailConfiguration = z.output<ReturnType<typeof schemasFor>['email']>;
export type SlackConfiguration = z.output<ReturnType<typeof schemasFor>['slack']>;
export type PagerDutyConfiguration = z.output<ReturnType<typeof schemasFor>['pagerduty']>;
/** As stored: the secret is always there (generated when the input had none). */
export type WebhookConfiguration = { url: string; secret: string };
export type ChannelConfiguration = EmailConfiguration | SlackConfiguration | PagerDutyConfiguration | WebhookConfiguration;

export type ParseResult = { ok: true; configuration: Record<string, unknown> } | { ok: false; fields: Record<string, string> };

/**
 * Parses `value` as the configuration of `type`; on failure answers the fields of a
 * VALIDATION_ERROR (`{ 'configuration.recipients.0': message }`). A webhook without a secret gets a
 * new one.
 */
export function parseConfiguration(type: ChannelType, value: unknown, rules: TargetRules): ParseResult {
  const schema = (rules.allowPrivate ? cached.open : cached.guarded)[type];
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const fields: Record<string, string> = {};
    for (const i of parsed.error.issues) {
      const paths = i.code === 'unrecognized_keys' ? i.keys.map((k) => [...i.path, k]) : [i.path];
      const message = i.code === 'unrecognized_keys' ? 'is not a known field' : i.message;
      for (const p of paths) fields[['configuration', ...p.map(String)].join('.')] ??= message;
    }
    return { ok: false, fields };
  }
  const configuration: Record<string, unknown> = { ...parsed.data };
  if (type === 'webhook' && configuration.secret === undefined) configuration.secret = newSigningSecret();
  return { ok: true, configuration };
}

const MASK = '…';
const last4 = (s: string) => s.slice(-4);

/** The masked form of each secret field of a type, from its stored value. */
const maskers: Record<ChannelType, Record<string, (v: string) => string>> = {
  email: {},
  // The path of a Slack webhook URL is its secret: keep the origin, so that the reader sees where it goes.
  slack: { webhookUrl: (v) => `${safeOrigin(v)}/${MASK}${last4(v)}` },
  pagerduty: { routing_key: (v) => `${MASK}${last4(v)}` },
  webhook: { secret: (v) => `whsec_${MASK}${last4(v)}` },
};

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

/** The configuration as reads show it: every secret field masked (docs/decisions.md, "Notification channels"). */
export function maskConfiguration(type: string, configuration: Record<string, unknown>): Record<string, unknown> {
  const m = maskers[type as ChannelType] ?? {};
  const out: Record<string, unknown> = { ...configuration };
  for (const [field, mask] of Object.entries(m)) if (typeof out[field] === 'string') out[field] = mask(out[field] as string);
  return out;
}

/**
 * A PATCH's configuration of the same type with its masked secrets replaced by the stored ones: a
 * client that sends back what it read keeps the secret. A webhook configuration without `secret`
 * keeps the stored secret too (give a new one to rotate it).
 */
export function restoreMasked(type: ChannelType, input: Record<string, unknown>, stored: Record<string, unknown>): Record<string, unknown> {
  const out = { ...input };
  for (const [field, mask] of Object.entries(maskers[type])) {
    const kept = stored[field];
    if (typeof kept !== 'string') continue;
    if (out[field] === mask(kept)) out[field] = kept;
  }
  if (type === 'webhook' && out.secret === undefined && typeof stored.secret === 'string') out.secret = stored.secret;
  return out;
}
