/**
 * Reading the OpenAPI document for the fuzz test: the operations it lists, their parameters and
 * JSON bodies ($ref resolved), a sampler for plausible valid values and a conservative oracle that
 * says when a value is certainly rejected by a schema. Nothing here knows any route by name.
 */
import { randomUUID } from 'node:crypto';

/** The JSON Schema subset zod's OpenAPI output uses. */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
}

interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: JsonSchema;
}

interface OpenApiOperation {
  parameters?: OpenApiParameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: JsonSchema }> };
  security?: unknown[];
  'x-body-limit'?: number;
}

/** The parts of an OpenAPI 3.1 document the fuzz test reads. */
export interface OpenApiDoc {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
  security?: unknown[];
}

/** A path or query parameter with its resolved schema. */
export interface Param {
  name: string;
  required: boolean;
  schema: JsonSchema;
}

/** One method on one path of the document. */
export interface Operation {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The OpenAPI path template, e.g. /api/v1/api-keys/{id}. */
  template: string;
  pathParams: Param[];
  query: Param[];
  /** The resolved application/json body schema, when the operation declares one. */
  body?: JsonSchema;
  /** True when the operation needs no credentials (an empty `security` list). */
  isPublic: boolean;
  /** The operation's own body limit in bytes (`x-body-limit`), when it differs from the server's. */
  bodyLimit?: number;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Follows `$ref`s (and `allOf` of one) into components.schemas until a concrete schema is reached. */
export function resolve(doc: OpenApiDoc, schema: JsonSchema | undefined): JsonSchema {
  let s: JsonSchema = schema ?? {};
  for (let i = 0; i < 32; i++) {
    if (s.$ref) {
      const name = s.$ref.replace(/^#\/components\/schemas\//, '');
      const target = doc.components?.schemas?.[name];
      if (!target) throw new Error(`unresolvable $ref ${s.$ref}`);
      s = target;
    } else if (s.allOf && s.allOf.length === 1 && Object.keys(s).length === 1) {
      s = s.allOf[0];
    } else return s;
  }
  throw new Error('$ref chain too long');
}

/** Every operation of the document, in document order. */
export function operationsOf(doc: OpenApiDoc): Operation[] {
  const out: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const m of METHODS) {
      const op = item[m];
      if (!op) continue;
      const params = (op.parameters ?? []).map((p) => ({ ...p, schema: resolve(doc, p.schema) }));
      const json = op.requestBody?.content?.['application/json']?.schema;
      out.push({
        method: m.toUpperCase() as Operation['method'],
        template,
        pathParams: params.filter((p) => p.in === 'path').map((p) => ({ name: p.name, required: true, schema: p.schema })),
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, required: !!p.required, schema: p.schema })),
        ...(json ? { body: resolve(doc, json) } : {}),
        isPublic: Array.isArray(op.security) && op.security.length === 0,
        ...(typeof op['x-body-limit'] === 'number' ? { bodyLimit: op['x-body-limit'] } : {}),
      });
    }
  }
  return out;
}

/** The JSON type of a value: null, array, object, string, boolean, integer or number. */
export function jsonTypeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** The JSON types a schema can accept, or null when it accepts anything (or we cannot tell). */
export function possibleTypes(doc: OpenApiDoc, schema: JsonSchema): Set<string> | null {
  const s = resolve(doc, schema);
  const branches = s.anyOf ?? s.oneOf;
  if (branches) {
    const all = new Set<string>();
    for (const b of branches) {
      const t = possibleTypes(doc, b);
      if (!t) return null;
      for (const x of t) all.add(x);
    }
    return all;
  }
  if (s.type) return new Set(Array.isArray(s.type) ? s.type : [s.type]);
  if (s.enum) return new Set(s.enum.map(jsonTypeOf));
  if ('const' in s) return new Set([jsonTypeOf(s.const)]);
  return null;
}

/** True when a value of JSON type `t` is allowed by the type set (an integer is also a number). */
export function typeAllowed(types: Set<string> | null, t: string): boolean {
  return !types || types.has(t) || (t === 'integer' && types.has('number'));
}

function regexOf(pattern: string): RegExp | null {
  try {
    return new RegExp(pattern, 'u');
  } catch {
    try {
      return new RegExp(pattern);
    } catch {
      return null;
    }
  }
}

/** Zod strings count UTF-16 units, JSON Schema counts code points: this is the smaller of the two. */
const codePoints = (s: string) => [...s].length;

/**
 * True only when `v` certainly fails `schema` (conservative: refinements the document cannot express,
 * such as "no NUL characters", are not known here). Unknown object keys are not failures: zod strips them.
 */
export function definitelyInvalid(doc: OpenApiDoc, schema: JsonSchema, v: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  const s = resolve(doc, schema);
  const branches = s.anyOf ?? s.oneOf;
  if (branches) return branches.every((b) => definitelyInvalid(doc, b, v, depth + 1));
  if (s.allOf) return s.allOf.some((b) => definitelyInvalid(doc, b, v, depth + 1));
  const t = jsonTypeOf(v);
  if (!typeAllowed(possibleTypes(doc, s), t)) return true;
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) return true;
  if ('const' in s && JSON.stringify(s.const) !== JSON.stringify(v)) return true;
  if (typeof v === 'string') {
    if (s.maxLength !== undefined && codePoints(v) > s.maxLength) return true;
    if (s.minLength !== undefined && v.length < s.minLength) return true;
    if (s.pattern) {
      const re = regexOf(s.pattern);
      if (re && !re.test(v)) return true;
    } else if (s.format === 'uuid' && !UUID_RE.test(v)) return true;
  } else if (typeof v === 'number') {
    if (!Number.isFinite(v)) return true;
    const types = possibleTypes(doc, s);
    if (types && types.has('integer') && !types.has('number') && !Number.isInteger(v)) return true;
    if (s.minimum !== undefined && v < s.minimum) return true;
    if (s.maximum !== undefined && v > s.maximum) return true;
    if (s.exclusiveMinimum !== undefined && v <= s.exclusiveMinimum) return true;
    if (s.exclusiveMaximum !== undefined && v >= s.exclusiveMaximum) return true;
  } else if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) return true;
    if (s.minItems !== undefined && v.length < s.minItems) return true;
    if (s.items && v.slice(0, 100).some((x) => definitelyInvalid(doc, s.items!, x, depth + 1))) return true;
  } else if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    for (const r of s.required ?? []) if (o[r] === undefined) return true;
    for (const [k, x] of Object.entries(o).slice(0, 200)) {
      const ps = s.properties?.[k];
      if (ps) {
        if (definitelyInvalid(doc, ps, x, depth + 1)) return true;
      } else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        if (definitelyInvalid(doc, s.additionalProperties, x, depth + 1)) return true;
      }
    }
  }
  return false;
}

/**
 * A plausible valid value for a schema: `ok` is false when some part could not be produced with
 * confidence (an unknown format or a pattern the sample does not satisfy).
 */
export function sample(doc: OpenApiDoc, schema: JsonSchema, depth = 0): { ok: boolean; value: unknown } {
  const s = resolve(doc, schema);
  if (depth > 16) return { ok: false, value: null };
  const branches = s.anyOf ?? s.oneOf;
  if (branches) {
    const nullable = branches.find((b) => possibleTypes(doc, b)?.has('null'));
    if (nullable) return { ok: true, value: null };
    for (const b of branches) {
      const r = sample(doc, b, depth + 1);
      if (r.ok) return r;
    }
    return { ok: false, value: null };
  }
  if (s.enum && s.enum.length > 0) return { ok: true, value: s.enum[0] };
  if ('const' in s) return { ok: true, value: s.const };
  const types = possibleTypes(doc, s);
  const type = types ? [...types].find((x) => x !== 'null') ?? 'null' : 'string';
  switch (type) {
    case 'null':
      return { ok: true, value: null };
    case 'boolean':
      return { ok: true, value: false };
    case 'integer':
    case 'number': {
      let n = 1;
      if (s.minimum !== undefined && n < s.minimum) n = s.minimum;
      if (s.exclusiveMinimum !== undefined && n <= s.exclusiveMinimum) n = Math.floor(s.exclusiveMinimum) + 1;
      if (s.maximum !== undefined && n > s.maximum) n = s.maximum;
      return { ok: !definitelyInvalid(doc, s, n), value: n };
    }
    case 'string': {
      let v: string;
      if (s.format === 'uuid') v = randomUUID();
      else if (s.format === 'date-time') v = '2999-01-01T00:00:00Z';
      else if (s.format === 'email') v = 'fuzz@example.com';
      else if (s.format === 'uri' || s.format === 'url') v = 'https://example.com/fuzz';
      else v = 'fuzz'.padEnd(Math.max(s.minLength ?? 0, 4), 'z').slice(0, Math.max(s.maxLength ?? 4, s.minLength ?? 0));
      const ok = !definitelyInvalid(doc, s, v) && (!s.format || ['uuid', 'date-time', 'email', 'uri', 'url'].includes(s.format));
      return { ok, value: v };
    }
    case 'array': {
      const n = s.minItems ?? 0;
      if (n === 0 || !s.items) return { ok: n === 0, value: [] };
      const item = sample(doc, s.items, depth + 1);
      return { ok: item.ok, value: Array.from({ length: n }, () => item.value) };
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      let ok = true;
      for (const r of s.required ?? []) {
        const ps = s.properties?.[r];
        const x = ps ? sample(doc, ps, depth + 1) : { ok: false, value: 'fuzz' };
        ok &&= x.ok;
        out[r] = x.value;
      }
      return { ok, value: out };
    }
    default:
      return { ok: false, value: null };
  }
}

/** Percent-encodes every UTF-8 byte outside the URL "unreserved" set (lone surrogates become U+FFFD). */
export function pct(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/** The literal path segments of every documented path (a fuzzed id equal to one may hit a sibling route). */
export function staticSegments(doc: OpenApiDoc): Set<string> {
  const out = new Set<string>();
  for (const p of Object.keys(doc.paths)) for (const seg of p.split('/')) if (seg && !seg.startsWith('{')) out.add(seg);
  return out;
}
