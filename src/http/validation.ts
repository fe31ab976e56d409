/**
 * Shared zod building blocks. Every string rejects NUL (Postgres cannot store it) and every
 * free-form object is bounded in depth and size (Postgres and recursive code have limits):
 * bad input is a 422, never a 500.
 */
import { z } from 'zod';
import ipaddr from 'ipaddr.js';

const NUL = /\u0000/;

/** True when a string can be stored: no NUL, and well-formed UTF-16 (a lone surrogate cannot be encoded). */
const storable = (s: string) => !NUL.test(s) && s.isWellFormed();

/** A string of bounded length that Postgres can store. */
export const str = (min = 0, max = 10_000) =>
  z
    .string()
    .min(min)
    .max(max)
    .refine(storable, 'must not contain NUL characters or unpaired surrogates');

export const uuid = () => z.uuid();

/** A storable string of at most `max` characters that `problem` accepts (null); refused with `label` and its message otherwise. */
export function checkedString(max: number, problem: (s: string) => string | null, label: string) {
  return str(0, max).superRefine((s, ctx) => {
    const p = problem(s);
    if (p) ctx.addIssue({ code: 'custom', message: `${label} ${p}` });
  });
}

/** A boolean query parameter: exactly `true` or `false`. */
export const booleanQuery = z.enum(['true', 'false']).transform((s) => s === 'true');

const MIN_INSTANT = Date.parse('0001-01-01T00:00:00.000Z');
const MAX_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * An ISO 8601 date-time with offset whose instant (in UTC) lies in years 0001-9999: the zod format
 * alone admits year 0000 and offsets that carry 9999-12-31 into year 10000, which Postgres rejects.
 */
export const isoDateTime = () =>
  z.iso.datetime({ offset: true }).refine((s) => {
    const t = Date.parse(s);
    return t >= MIN_INSTANT && t <= MAX_INSTANT;
  }, 'must be a date-time between 0001-01-01 and 9999-12-31 (UTC)');
/** A path id: malformed ones are answered 404 by the error handler. */
export const idParams = z.object({ id: z.uuid() });

export const MAX_JSON_DEPTH = 20;
export const MAX_JSON_NODES = 10_000;

/** Walks a JSON value; returns why it is unacceptable, or null. */
export function checkJson(value: unknown, maxDepth = MAX_JSON_DEPTH, maxNodes = MAX_JSON_NODES): string | null {
  let nodes = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (++nodes > maxNodes) return `has more than ${maxNodes} values`;
    if (depth > maxDepth) return `is nested deeper than ${maxDepth} levels`;
    if (typeof v === 'string') {
      if (!storable(v)) return 'must not contain NUL characters or unpaired surrogates';
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) return 'must contain finite numbers';
    } else if (Array.isArray(v)) {
      for (const x of v) stack.push([x, depth + 1]);
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (!storable(k)) return 'must not contain NUL characters or unpaired surrogates';
        stack.push([x, depth + 1]);
      }
    }
  }
  return null;
}

/** A free-form JSON object (metadata, filter configs), bounded as above. */
export const jsonObject = (maxDepth = MAX_JSON_DEPTH, maxNodes = MAX_JSON_NODES) =>
  z.record(z.string(), z.unknown()).superRefine((v, ctx) => {
    const why = checkJson(v, maxDepth, maxNodes);
    if (why) ctx.addIssue({ code: 'custom', message: `object ${why}` });
  });

export const environmentEnum = z.enum(['development', 'staging', 'production']);
export type Environment = z.infer<typeof environmentEnum>;

/** True for an IPv4/IPv6 address or CIDR range. */
export function isIpOrCidr(s: string, v4Only = false): boolean {
  try {
    if (s.includes('/')) {
      const [addr] = ipaddr.parseCIDR(s);
      return !v4Only || addr.kind() === 'ipv4';
    }
    if (v4Only) return ipaddr.IPv4.isValidFourPartDecimal(s);
    return ipaddr.isValid(s);
  } catch {
    return false;
  }
}

export const ipv4OrCidr = () => z.string().max(64).refine((s) => isIpOrCidr(s, true), 'must be an IPv4 address or CIDR range');
export const ipOrCidr = () => z.string().max(64).refine((s) => isIpOrCidr(s), 'must be an IP address or CIDR range');

/** limit (1-100, default 50) and offset (>= 0, default 0) query parameters. */
export const pagination = {
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
};
