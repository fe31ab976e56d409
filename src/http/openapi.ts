/**
 * The OpenAPI document (served at /api-docs.json, browsed at /api-docs), built from the routes' zod
 * schemas and `config.auth` in one place, so every domain gets the same document rules for free
 * (docs/decisions.md, "OpenAPI document"). This file is the document-wide pass; openapi-schemas.ts
 * turns zod into JSON Schema per route, openapi-responses.ts holds the shared responses and headers:
 * - one component per registered schema (`.meta({ id })`), under its own name, rendered in zod's
 *   input mode where requests use it and output mode where responses do; unused ones are left out;
 * - in request schemas every object is `additionalProperties: false` unless zod says otherwise
 *   (`z.looseObject`, `z.record`);
 * - error responses derived from the route: 401/403/429 from its auth, 400/413/415 from a method that may carry a body,
 *   404 from a path id, 422 and 500 always (docs/decisions.md, "Strict inputs"); 404 and 409 beyond that only where the route
 *   declares them (`notFoundResponse`, `conflictResponse` in src/http/envelope.ts);
 * - response descriptions and headers (X-Request-Id, X-RateLimit-*, Retry-After, the deprecated
 *   alias's Deprecation/Sunset/Link), the access each operation needs appended to its description,
 *   and the route's `x-example` placed on its request and success bodies.
 */
import type { FastifyInstance } from 'fastify';
import { webhooksSection } from './openapi-webhooks.js';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { closure, componentsIn, REF, refsIn, renameRefs, transformRoute, type Json, type RouteFacts } from './openapi-schemas.js';
import { accessLine, ALIAS_HEADERS, DERIVED, derivedErrorStatuses, ERRORS, HEADERS, headersOf, RATE_HEADERS, successDescription, type HeaderName } from './openapi-responses.js';

export { derivedErrorStatuses } from './openapi-responses.js';

/** What a route's `schema` may add for the document beyond the OpenAPI fields. */
export interface RouteExample {
  /** An example request body. */
  request?: unknown;
  /** An example body of the route's first success response. */
  response?: unknown;
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

  // The deliveries receivers get, one entry per event type (src/http/openapi-webhooks.ts).
  doc.webhooks = webhooksSection();
  tags.add('Webhook events');
  const known = new Map(((doc.tags as { name: string }[] | undefined) ?? []).map((t) => [t.name, t]));
  doc.tags = [...tags].map((name) => known.get(name) ?? { name, description: `${name} operations.` });
  return doc;
}

const INFO_DESCRIPTION = [
  'Register agents, ingest traces, enforce policies, track budgets and keep a tamper-evident audit log.',
  'Authenticate with `X-API-Key: svc_<env>_…`, `Authorization: Bearer svc_<env>_…`, or `Authorization: Bearer <JWT>`.',
  'Errors are always `{ error: { code, message, fields? } }`. Every response carries `X-Request-Id`.',
  'Each operation has a stable `operationId`, `<resource>.<action>` (README, "API description").',
  'A known path called with a method it does not have answers 405 with an `Allow` header listing the methods it has.',
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
  Webhooks: 'Signed outbound webhooks: endpoints, secrets, the delivery log, redelivery (admin).',
  'Webhook events': 'The requests the service sends to your webhook URLs, one per event type (see the top-level webhooks section).',
  Agents: 'Agents: registration, lifecycle (pause, resume, archive, kill switch), budgets, statistics, agent-scoped keys.',
  Traces: 'Traces of agent activity: ingest, search, trees, statistics, export, review flags.',
};
