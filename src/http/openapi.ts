/**
 * The OpenAPI document (served at /api-docs.json, browsed at /api-docs), built from the routes' zod
 * schemas and `config.auth` in one place, so every domain gets the same document rules for free
 * (docs/decisions.md, "OpenAPI document"):
 * - one component per registered schema (`.meta({ id })`), under its own name, rendered in zod's
 *   input mode where requests use it and output mode where responses do; unused ones are left out;
 * - in request schemas every object is `additionalProperties: false` unless zod says otherwise
 *   (`z.looseObject`, `z.record`);
 * - error responses derived from the route: 401/403/429 from its auth, 400/413/415 from a body,
 *   404 from a path id, 422 and 500 always (docs/decisions.md, "Strict inputs"); 404 and 409 beyond that only where the route
 *   declares them (`notFoundResponse`, `conflictResponse` in src/http/envelope.ts);
 * - response descriptions and headers (X-Request-Id, X-RateLimit-*, Retry-After, the deprecated
 *   alias's Deprecation/Sunset/Link), the access each operation needs appended to its description,
 *   and the route's `x-example` placed on its request and success bodies.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { z } from 'zod';
import type { RouteAuth } from './principal.js';

type Json = Record<string, unknown>;
type Io = 'input' | 'output';

const REF = '#/components/schemas/';
const PLACEHOLDER = '__agov_schema__';
const TARGET = 'draft-2020-12';
/** Error statuses this module derives from the route; a route's own declaration of them is ignored. */
const DERIVED = new Set(['400', '401', '403', '413', '415', '422', '429', '500']);

/** What a route's `schema` may add for the document beyond the OpenAPI fields. */
export interface RouteExample {
  /** An example request body. */
  request?: unknown;
  /** An example body of the route's first success response. */
  response?: unknown;
}

/** What the per-route transform records for the document-level pass (removed from the output). */
interface RouteFacts {
  method: string;
  auth: RouteAuth;
  body: boolean;
  bodyOptional: boolean;
  query: boolean;
  params: boolean;
}

/**
 * Adjusts zod's output: dates are strings on the wire, and an `anyOf` with an empty (match-anything)
 * branch, as `z.unknown().nullable()` gives, is the empty schema itself.
 */
function override(io: Io) {
  return (ctx: { zodSchema: unknown; jsonSchema: Json }) => {
    const def = (ctx.zodSchema as { _zod?: { def?: { type?: string } } })._zod?.def;
    if (def?.type === 'date' && io === 'output') Object.assign(ctx.jsonSchema, { type: 'string', format: 'date-time' });
    const anyOf = ctx.jsonSchema.anyOf as Json[] | undefined;
    if (anyOf?.some((branch) => Object.keys(branch).length === 0)) delete ctx.jsonSchema.anyOf;
  };
}

/** Removes the identity keywords zod stamps on generated roots. */
function strip(schema: Json): Json {
  const { $schema: _s, $id: _i, id: _id, ...rest } = schema;
  return rest;
}

/**
 * In request schemas an object without `additionalProperties` gets `false` (inputs are strict);
 * an explicit `{}` (z.looseObject) or a schema (z.record) is left as zod wrote it.
 */
function closeInputObjects(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(closeInputObjects);
  if (!node || typeof node !== 'object') return;
  const s = node as Json;
  if (s.type === 'object' && s.additionalProperties === undefined && s.propertyNames === undefined) s.additionalProperties = false;
  for (const v of Object.values(s)) closeInputObjects(v);
}

/** One route schema as JSON Schema; registered schemas inside it (and itself) become `$ref`s. */
function routeSchemaToJson(schema: z.ZodType, io: Io): Json {
  const id = z.globalRegistry.get(schema)?.id;
  if (id) return { $ref: REF + id };
  const one = z.registry<{ id: string }>();
  one.add(schema, { id: PLACEHOLDER });
  const out = z.toJSONSchema(one, {
    target: TARGET,
    io,
    metadata: z.globalRegistry,
    unrepresentable: 'any',
    cycles: 'ref',
    reused: 'inline',
    uri: (ref) => REF + ref,
    override: override(io),
  }).schemas[PLACEHOLDER] as Json;
  // References to other registered schemas come out as `<uri>#/$defs/<id>`: point them at the component.
  const json = JSON.parse(JSON.stringify(strip(out)), (key, v) =>
    key === '$ref' && typeof v === 'string' ? REF + v.replace(/^.*(?:\$defs|definitions|components\/schemas)\//, '') : v,
  ) as Json;
  if (io === 'input') closeInputObjects(json);
  return json;
}

/** Every registered schema rendered in one mode, by id. */
function componentsIn(io: Io): Record<string, Json> {
  const all = z.toJSONSchema(z.globalRegistry, {
    target: TARGET,
    io,
    unrepresentable: 'any',
    cycles: 'ref',
    reused: 'inline',
    uri: (ref) => REF + ref,
    override: override(io),
  }).schemas as Record<string, Json>;
  const out: Record<string, Json> = {};
  for (const [id, s] of Object.entries(all)) {
    out[id] = strip(s);
    if (io === 'input') closeInputObjects(out[id]);
  }
  return out;
}

/** Names of the components `$ref`ed anywhere in `node`. */
function refsIn(node: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(node)) node.forEach((n) => refsIn(n, into));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith(REF)) into.add(v.slice(REF.length));
      else refsIn(v, into);
    }
  }
  return into;
}

/** `names` plus every component they reach through `$ref`s. */
function closure(names: Set<string>, rendered: Record<string, Json>): Set<string> {
  const out = new Set<string>();
  const todo = [...names];
  while (todo.length) {
    const n = todo.pop()!;
    if (out.has(n) || !rendered[n]) continue;
    out.add(n);
    todo.push(...refsIn(rendered[n]));
  }
  return out;
}

/** Rewrites `$ref`s to `from` into `$ref`s to `to` inside `node`. */
function renameRefs(node: unknown, from: string, to: string): void {
  if (Array.isArray(node)) return node.forEach((n) => renameRefs(n, from, to));
  if (!node || typeof node !== 'object') return;
  const s = node as Json;
  if (s.$ref === REF + from) s.$ref = REF + to;
  for (const v of Object.values(s)) renameRefs(v, from, to);
}

/** fastify-swagger's per-route `transform`: zod → JSON Schema in the right mode, facts kept for later. */
function transformRoute({ schema, url, route }: { schema: Json; url: string; route: RouteOptions }) {
  if (!schema) return { schema, url };
  const { response, headers, querystring, body, params, hide, produces: _produces, ...rest } = schema as Json & Record<string, z.ZodType | undefined>;
  if (hide) return { schema: { hide: true }, url };
  const out: Json = { ...rest };
  const inputs = { headers, querystring, body, params };
  for (const [k, v] of Object.entries(inputs)) if (v) out[k] = routeSchemaToJson(v, 'input');
  if (response) {
    const res: Json = {};
    for (const [status, r] of Object.entries(response as unknown as Record<string, unknown>)) {
      const content = (r as { content?: Record<string, { schema: z.ZodType }> }).content;
      if (content) {
        const media: Json = {};
        for (const [type, { schema: s }] of Object.entries(content)) media[type] = { schema: routeSchemaToJson(s, 'output') };
        res[status] = { description: (r as { description?: string }).description, content: media };
      } else res[status] = routeSchemaToJson(r as z.ZodType, 'output');
    }
    out.response = res;
  }
  const method = Array.isArray(route.method) ? route.method[0] : route.method;
  const facts: RouteFacts = {
    method,
    auth: route.config?.auth ?? {},
    body: !!body,
    bodyOptional: !!body && body.safeParse(undefined).success,
    query: !!querystring,
    params: !!params,
  };
  out['x-agov-route'] = facts;
  return { schema: out, url };
}

const header = (description: string, schema: Json = { type: 'string' }) => ({ description, schema });

const HEADERS = {
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
type HeaderName = keyof typeof HEADERS;
const headerRef = (name: HeaderName) => ({ $ref: `#/components/headers/${name}` });
const headersOf = (names: HeaderName[]) => Object.fromEntries(names.map((n) => [n, headerRef(n)]));

const RATE_HEADERS: HeaderName[] = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];
const ALIAS_HEADERS: HeaderName[] = ['Deprecation', 'Sunset', 'Link'];

/** The shared error responses, by status: name in components.responses, description, extra headers. */
const ERRORS: Record<string, { name: string; description: string; headers?: HeaderName[] }> = {
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
export function derivedErrorStatuses(f: Pick<RouteFacts, 'auth' | 'body' | 'query' | 'params'>): string[] {
  const s = new Set<string>(['500']);
  if (!f.auth.public) {
    s.add('401');
    s.add('403');
    if (f.auth.rateLimit !== false) s.add('429');
  }
  if (f.body) for (const c of ['400', '413', '415']) s.add(c);
  // Every operation refuses what it does not take: an unknown query parameter, or a body where none
  // is declared, is 422 (docs/decisions.md, "Strict inputs").
  s.add('422');
  if (f.params) s.add('404');
  return [...s];
}

/** The operation's access, as one sentence appended to its description. */
function accessLine(f: RouteFacts): string {
  const a = f.auth;
  if (a.public) return '**Access:** public (no credentials).';
  const role = a.scope === 'admin' ? 'admin' : (a.role ?? (f.method === 'GET' || f.method === 'HEAD' ? 'viewer' : 'developer'));
  const who = a.scope ? `role \`${role}\`; API keys also need scope \`${a.scope}\`` : `role \`${role}\` (any scope)`;
  const agentKeys = a.agentKeys ? ' Agent-scoped keys may call it, for their own agent only.' : ' Agent-scoped keys are refused.';
  const limit = a.rateLimit === false ? ' Not rate limited.' : ` Rate limit class: ${a.rateLimit ?? 'control'}.`;
  return `**Access:** ${who}.${agentKeys}${limit}`;
}

/** A success response's description, from its status and body. */
function successDescription(status: string, content: Json | undefined): string {
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

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** fastify-swagger's `transformObject`: responses, access, examples, components and tags, document-wide. */
function transformDocument({ openapiObject }: { openapiObject: Json }): Json {
  const doc = structuredClone(openapiObject) as Json & { paths: Record<string, Record<string, Json>>; components: Json };
  const usedErrors = new Set<string>();
  const tags = new Set<string>();
  for (const item of Object.values(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      // A route without any schema never passed the route transform: it takes nothing and is authenticated.
      const facts = (op['x-agov-route'] as RouteFacts | undefined) ?? { method: method.toUpperCase(), auth: {}, body: false, bodyOptional: false, query: false, params: false };
      delete op['x-agov-route'];
      const example = op['x-example'] as RouteExample | undefined;
      delete op['x-example'];
      // Extra headers a route documents on its success responses (`'x-response-headers': ['Server-Timing']`).
      const ownHeaders = (op['x-response-headers'] as HeaderName[] | undefined) ?? [];
      delete op['x-response-headers'];
      for (const t of (op.tags as string[] | undefined) ?? []) tags.add(t);
      if (facts.auth.public) op.security = [];
      op.description = [op.description, accessLine(facts)].filter(Boolean).join('\n\n');
      const body = op.requestBody as Json | undefined;
      if (body) {
        body.required = !facts.bodyOptional;
        const media = (body.content as Record<string, Json>)['application/json'];
        if (media && example?.request !== undefined) media.example = example.request;
      }
      const declared = (op.responses ?? {}) as Record<string, Json>;
      const responses: Record<string, Json> = {};
      let exampled = false;
      for (const [status, res] of Object.entries(declared)) {
        if (Number(status) >= 400 && status !== '503') continue;
        const content = res.content as Record<string, Json> | undefined;
        if (content && !exampled && example?.response !== undefined && Number(status) < 300) {
          for (const m of Object.values(content)) if (!('example' in m)) m.example = example.response;
          exampled = true;
        }
        const extra: HeaderName[] = [...(content && 'text/csv' in content ? (['Content-Disposition'] as HeaderName[]) : []), ...(Number(status) < 300 ? ownHeaders : [])];
        responses[status] = {
          description: res.description && res.description !== 'Default Response' ? res.description : successDescription(status, content),
          headers: headersOf(['X-Request-Id', ...(facts.auth.public || facts.auth.rateLimit === false ? [] : RATE_HEADERS), ...ALIAS_HEADERS, ...extra]),
          ...(content ? { content } : {}),
        };
      }
      const errors = new Set(derivedErrorStatuses(facts));
      for (const status of Object.keys(declared)) if (Number(status) >= 400 && status !== '503' && !DERIVED.has(status)) errors.add(status);
      for (const status of [...errors].sort()) {
        const e = ERRORS[status];
        if (!e) throw new Error(`OpenAPI: no shared description for error status ${status}`);
        usedErrors.add(status);
        responses[status] = { $ref: `#/components/responses/${e.name}` };
      }
      op.responses = responses;
    }
  }

  // Error responses and headers shared by every operation.
  const errorResponses: Json = {};
  for (const status of [...usedErrors].sort()) {
    const e = ERRORS[status];
    errorResponses[e.name] = {
      description: e.description,
      headers: headersOf(['X-Request-Id', ...(e.headers ?? [])]),
      content: { 'application/json': { schema: { $ref: `${REF}Error` } } },
    };
  }
  doc.components.responses = errorResponses;
  doc.components.headers = Object.fromEntries(Object.entries(HEADERS));

  // One component per registered schema used, in the mode of its use (see the top comment).
  const input = componentsIn('input');
  const output = componentsIn('output');
  const inputUses = new Set<string>();
  const outputUses = refsIn(errorResponses);
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item)) {
      refsIn(op.parameters, inputUses);
      refsIn(op.requestBody, inputUses);
      refsIn(op.responses, outputUses);
    }
  }
  const inputNeeded = closure(inputUses, input);
  const outputNeeded = closure(outputUses, output);
  const schemas: Record<string, Json> = {};
  for (const id of outputNeeded) schemas[id] = output[id];
  for (const id of inputNeeded) {
    if (!outputNeeded.has(id) || JSON.stringify(input[id]) === JSON.stringify(output[id])) {
      schemas[id] = input[id];
      continue;
    }
    // Used both ways and rendered differently (defaults, transforms): the request side gets its own
    // component, `<id>Input` (docs/decisions.md, "OpenAPI document"); none does today.
    const twin = `${id}Input`;
    for (const item of Object.values(doc.paths)) for (const op of Object.values(item)) {
      renameRefs(op.parameters, id, twin);
      renameRefs(op.requestBody, id, twin);
    }
    for (const other of inputNeeded) if (!outputNeeded.has(other)) renameRefs(input[other], id, twin);
    schemas[twin] = input[id];
  }
  doc.components.schemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));

  const known = new Map(((doc.tags as { name: string }[] | undefined) ?? []).map((t) => [t.name, t]));
  doc.tags = [...tags].map((name) => known.get(name) ?? { name, description: `${name} operations.` });
  return doc;
}

const INFO_DESCRIPTION = [
  'Register agents, ingest traces, enforce policies, track budgets and keep a tamper-evident audit log.',
  'Authenticate with `X-API-Key: svc_<env>_…`, `Authorization: Bearer svc_<env>_…`, or `Authorization: Bearer <JWT>`.',
  'Errors are always `{ error: { code, message, fields? } }`. Every response carries `X-Request-Id`.',
  'Each operation has a stable `operationId`, `<resource>.<action>` (README, "API description").',
  'The unversioned alias `/api/...` of every `/api/v1/...` path is deprecated: its responses carry `Deprecation`, `Sunset` and `Link` headers.',
].join('\n\n');

/** Registers the document, its UI at /api-docs and /api-docs.json (all public). */
export async function registerOpenApi(app: FastifyInstance, tagDescriptions: Record<string, string> = TAGS): Promise<void> {
  app.addHook('onRoute', (route) => {
    if (route.url === '/api-docs' || route.url.startsWith('/api-docs/')) route.config = { ...route.config, auth: { public: true } };
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agent Governance Control Plane API',
        description: INFO_DESCRIPTION,
        version: '1.0.0',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: '/' }],
      tags: Object.entries(tagDescriptions).map(([name, description]) => ({ name, description })),
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          bearer: { type: 'http', scheme: 'bearer', description: 'An API key (svc_…) or a JWT from the identity provider' },
        },
      },
      security: [{ apiKey: [] }, { bearer: [] }],
    },
    transform: transformRoute as never,
    transformObject: transformDocument as never,
  });
  await app.register(swaggerUi, { routePrefix: '/api-docs', uiConfig: { deepLinking: true } });
  app.get('/api-docs.json', { config: { auth: { public: true } }, schema: { hide: true } }, async () => app.swagger());
}

/** Descriptions of the tags the domains use (a tag missing here gets a generic one). */
const TAGS: Record<string, string> = {
  Health: 'Service health, with database and cache checked.',
  'API keys': 'Organization API keys: create, rotate, restrict by IP, expire.',
  Settings: 'Organization and security settings (admin).',
  Teams: 'Teams and their members.',
  'Saved filters': "Each principal's saved list filters.",
  'Audit log': 'The tamper-evident audit log: entries, hash-chain verification, signed checkpoints, export.',
  Agents: 'Agents: registration, lifecycle (pause, resume, archive, kill switch), budgets, statistics, agent-scoped keys.',
  Traces: 'Traces of agent activity: ingest, search, trees, statistics, export, review flags.',
};
