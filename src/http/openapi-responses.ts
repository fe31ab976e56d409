/**
 * The shared responses of the OpenAPI document (src/http/openapi.ts): headers, the error responses
 * and which of them an operation answers, the access line and success descriptions.
 */
import { REF, type Json, type RouteFacts } from './openapi-schemas.js';

/** Methods whose requests may carry a body, which the server parses before the route runs. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Error statuses derived from the route; a route's own declaration of them is ignored. */
export const DERIVED = new Set(['400', '401', '403', '413', '415', '422', '429', '500']);

const header = (description: string, schema: Json = { type: 'string' }) => ({ description, schema });

export const HEADERS = {
  'X-Request-Id': header('The request id (yours from the X-Request-Id request header when well formed, else a new UUID); it is in every log line of the request.'),
  'X-RateLimit-Limit': header('Requests allowed per minute for this organization and route class.', { type: 'integer' }),
  'X-RateLimit-Remaining': header('Requests left in the current minute.', { type: 'integer' }),
  'X-RateLimit-Reset': header('Seconds until the current window ends.', { type: 'integer' }),
  'Retry-After': header('Seconds to wait before trying again.', { type: 'integer' }),
  Deprecation: header('`true`, only when the request used the deprecated unversioned alias `/api/...` instead of `/api/v1/...`.'),
  Sunset: header('When the deprecated alias `/api/...` stops working (HTTP date); only on requests through the alias.'),
  Link: header('`<successor URL>; rel="successor-version"`, only on requests through the deprecated alias `/api/...`.'),
  'Content-Disposition': header('`attachment; filename="<name>-<date>.<format>"`.'),
  'Server-Timing': header('Where the request spent its time, in ms (W3C Server Timing), e.g. `agent;dur=0.31, policy;dur=0.12, total;dur=0.45`.'),
} as const;
export type HeaderName = keyof typeof HEADERS;
const headerRef = (name: HeaderName) => ({ $ref: `#/components/headers/${name}` });
/** `headers` of a response: references to the shared components. */
export const headersOf = (names: HeaderName[]) => Object.fromEntries(names.map((n) => [n, headerRef(n)]));

export const RATE_HEADERS: HeaderName[] = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];
export const ALIAS_HEADERS: HeaderName[] = ['Deprecation', 'Sunset', 'Link'];

/** The shared error responses, by status: name in components.responses, description, extra headers. */
export const ERRORS: Record<string, { name: string; description: string; headers?: HeaderName[] }> = {
  '400': { name: 'BadRequest', description: 'BAD_REQUEST: the body is not well-formed JSON.' },
  '401': { name: 'Unauthorized', description: 'UNAUTHORIZED: missing, invalid, expired or revoked credentials.' },
  '403': {
    name: 'Forbidden',
    description: "FORBIDDEN: the principal lacks the role or scope (see the operation's Access line), or the organization's IP allowlist or environment rules refuse it.",
  },
  '404': { name: 'NotFound', description: 'NOT_FOUND: no such resource in your organization (a malformed id is also 404).' },
  '409': { name: 'Conflict', description: 'CONFLICT (taken name or id, duplicate membership) or INVALID_TRANSITION (the current state does not allow the change).' },
  '413': { name: 'PayloadTooLarge', description: 'PAYLOAD_TOO_LARGE: the body exceeds the body limit.' },
  '415': { name: 'UnsupportedMediaType', description: 'UNSUPPORTED_MEDIA_TYPE: send the body as `Content-Type: application/json`.' },
  '422': { name: 'ValidationError', description: 'VALIDATION_ERROR: `error.fields` names each invalid field (dotted path) with its problem.' },
  '429': { name: 'RateLimited', description: 'RATE_LIMITED: the per-minute limit is used up; retry after `Retry-After` seconds.', headers: ['Retry-After', ...RATE_HEADERS] },
  '500': { name: 'InternalError', description: 'INTERNAL_ERROR: an unexpected failure (logged with the request id); the body never holds details.' },
};

/** The error statuses an operation can answer, derived from its route facts (see the top comment). */
export function derivedErrorStatuses(f: Pick<RouteFacts, 'method' | 'auth' | 'body' | 'query' | 'params'>): string[] {
  const s = new Set<string>(['500']);
  if (!f.auth.public) {
    s.add('401');
    s.add('403');
    if (f.auth.rateLimit !== false) s.add('429');
  }
  // A body is parsed (and can be malformed, too large or not JSON) wherever the method may carry
  // one, declared or not: an operation without a body still answers 400/413/415 to a bad one.
  if (f.body || BODY_METHODS.has(f.method)) for (const c of ['400', '413', '415']) s.add(c);
  // Every operation refuses what it does not take: an unknown query parameter, or a body where none
  // is declared, is 422 (docs/decisions.md, "Strict inputs").
  s.add('422');
  if (f.params) s.add('404');
  return [...s];
}

/** The operation's access, as one sentence appended to its description. */
export function accessLine(f: RouteFacts): string {
  const a = f.auth;
  if (a.public) return '**Access:** public (no credentials).';
  const role = a.scope === 'admin' ? 'admin' : (a.role ?? (f.method === 'GET' || f.method === 'HEAD' ? 'viewer' : 'developer'));
  const who = a.scope ? `role \`${role}\`; API keys also need scope \`${a.scope}\`` : `role \`${role}\` (any scope)`;
  const agentKeys = a.agentKeys ? ' Agent-scoped keys may call it, for their own agent only.' : ' Agent-scoped keys are refused.';
  const limit = a.rateLimit === false ? ' Not rate limited.' : ` Rate limit class: ${a.rateLimit ?? 'control'}.`;
  return `**Access:** ${who}.${agentKeys}${limit}`;
}

/** A success response's description, from its status and body. */
export function successDescription(status: string, content: Json | undefined): string {
  if (status === '204') return 'Done; no content.';
  const schema = (Object.values(content ?? {})[0] as { schema?: Json } | undefined)?.schema;
  const prefix = status === '201' ? 'Created' : status === '202' ? 'Accepted' : status === '503' ? 'Unhealthy' : 'OK';
  const refName = (s: unknown) => ((s as Json | undefined)?.$ref as string | undefined)?.slice(REF.length);
  const props = (schema?.properties ?? {}) as Json;
  const data = props.data as Json | undefined;
  if (refName(schema)) return `${prefix}: the ${refName(schema)}.`;
  if (data && refName(data)) return `${prefix}: the ${refName(data)} in \`data\`.`;
  if (data?.type === 'array' && refName(data.items)) {
    return props.meta ? `${prefix}: ${refName(data.items)} items in \`data\`, counts in \`meta\`.` : `${prefix}: ${refName(data.items)} items in \`data\`.`;
  }
  return `${prefix}.`;
}
