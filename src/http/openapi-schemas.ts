/**
 * The per-route half of the OpenAPI document (src/http/openapi.ts): zod schemas to JSON Schema in the
 * mode of their use (input for requests, output for responses), registered schemas as `$ref`s,
 * request objects closed, and the route's facts recorded for the document-wide pass.
 */
import type { RouteOptions } from 'fastify';
import { z } from 'zod';
import type { RouteAuth } from './principal.js';

export type Json = Record<string, unknown>;
type Io = 'input' | 'output';

export const REF = '#/components/schemas/';
const PLACEHOLDER = '__agov_schema__';
const TARGET = 'draft-2020-12';

/** What the per-route transform records for the document-level pass (removed from the output). */
export interface RouteFacts {
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
export function componentsIn(io: Io): Record<string, Json> {
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
export function refsIn(node: unknown, into = new Set<string>()): Set<string> {
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
export function closure(names: Set<string>, rendered: Record<string, Json>): Set<string> {
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
export function renameRefs(node: unknown, from: string, to: string): void {
  if (Array.isArray(node)) return node.forEach((n) => renameRefs(n, from, to));
  if (!node || typeof node !== 'object') return;
  const s = node as Json;
  if (s.$ref === REF + from) s.$ref = REF + to;
  for (const v of Object.values(s)) renameRefs(v, from, to);
}

/** fastify-swagger's per-route `transform`: zod → JSON Schema in the right mode, facts kept for later. */
export function transformRoute({ schema, url, route }: { schema: Json; url: string; route: RouteOptions }) {
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
