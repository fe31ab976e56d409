/**
 * Strict inputs (docs/decisions.md "Strict inputs"): the API refuses what it does not understand.
 *
 * - The validator compiler validates `body` and `querystring` against a strict copy of the route's
 *   zod schema: every plain `z.object` (zod's default strip mode) refuses unknown keys at every
 *   nesting level; `z.looseObject` (and any explicit catchall) opts out; `z.record` keys stay free.
 *   An unknown key is a 422 `fields.<path>` = "unknown field", with "(did you mean x?)" when a known
 *   key is close. The route's own schema (and so the OpenAPI document) is left untouched.
 * - An operation that declares no body or no query refuses one (same 422), so no input is ever
 *   silently ignored.
 * - A missing or empty JSON body is `{}` for an operation that declares a body: optional bodies
 *   (pause, flag) accept it and required fields are named by the 422.
 * - Only JSON bodies are parsed: anything else (including `text/plain`) is 415.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { validation } from '../core/errors.js';

/** The params of the issue raised for an unknown key: the keys its object knows. */
interface UnknownFieldParams {
  unknownField: true;
  known: string[];
}

/** The wording of an unknown-key error (docs/decisions.md "Strict inputs"). */
export function unknownFieldMessage(key: string, known: readonly string[]): string {
  const hint = closestKey(key, known);
  return hint ? `unknown field (did you mean ${hint}?)` : 'unknown field';
}

const normalize = (k: string) => k.toLowerCase().replace(/[^a-z0-9]/g, '');

/**
 * Edit distance counting insertions, deletions, substitutions and swaps of neighbours (`nmae` is one
 * from `name`). Key names are short, so the full table is cheap; a dependency would buy nothing.
 */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * The known key a caller most likely meant: the same name in another case style
 * (`defaultKeyExpiryDays` → `default_key_expiry_days`) first, else the closest spelling within a
 * third of the name's length (`startDate` → `startTime`, `limt` → `limit`); none when nothing is close.
 */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const n = normalize(key);
  if (!n) return undefined;
  const sameName = known.find((k) => normalize(k) === n);
  if (sameName) return sameName;
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(n.length / 3)) + 1;
  for (const k of known) {
    const d = distance(n, normalize(k));
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

/** The catchall that turns each unknown key of an object with these known keys into one issue. */
const unknownKey = (known: string[]) =>
  z.custom(() => false, { message: 'unknown field', params: { unknownField: true, known } satisfies UnknownFieldParams });

type AnySchema = z.core.$ZodType;
type Def = Record<string, unknown> & { type: string };

/**
 * A copy of `schema` in which every plain object refuses unknown keys, at every nesting level.
 * Intersections are left as they are (each side would refuse the other's keys); none is an input today.
 */
export function strictCopy<T extends AnySchema>(schema: T, seen = new Map<AnySchema, AnySchema>()): T {
  const done = seen.get(schema);
  if (done) return done as T;
  const def = schema._zod.def as unknown as Def;
  const copy = (d: Def) => {
    const c = new schema._zod.constr(d as never) as T;
    seen.set(schema, c);
    return c;
  };
  const strict = (s: unknown) => strictCopy(s as AnySchema, seen);
  switch (def.type) {
    case 'object': {
      // Each property is copied when zod first reads it, so a shape that refers to itself (a getter) ends.
      const shape = {};
      for (const [k, v] of Object.entries(def.shape as Record<string, AnySchema>)) {
        Object.defineProperty(shape, k, { enumerable: true, get: () => strict(v) });
      }
      return copy({ ...def, shape, catchall: def.catchall ?? unknownKey(Object.keys(shape)) });
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'catch':
    case 'readonly':
    case 'nonoptional':
      return copy({ ...def, innerType: strict(def.innerType) });
    case 'pipe':
      return copy({ ...def, in: strict(def.in), out: strict(def.out) });
    case 'array':
      return copy({ ...def, element: strict(def.element) });
    case 'union':
      return copy({ ...def, options: (def.options as AnySchema[]).map(strict) });
    case 'record':
      return copy({ ...def, valueType: strict(def.valueType) });
    case 'tuple':
      return copy({ ...def, items: (def.items as AnySchema[]).map(strict), rest: def.rest ? strict(def.rest) : def.rest });
    case 'lazy': {
      const getter = def.getter as () => AnySchema;
      return copy({ ...def, getter: () => strict(getter()) });
    }
    default:
      return schema;
  }
}

/**
 * A `__proto__` query parameter (a JSON body with one is already 400): zod skips that key, and a
 * `fields` entry by that name would not serialize, so it is named under `fields.query`.
 */
const PROTO = '__proto__';
const PROTO_MESSAGE = `unknown field ${PROTO}`;
// The mark fastify-type-provider-zod puts on its issues (a registered symbol), so the error handler treats ours alike.
const ISSUE_MARK = Symbol.for('ZodFastifySchemaValidationError');

/** An issue as fastify-type-provider-zod hands it on: the zod issue's own `params` under `params.params`. */
interface CompiledIssue {
  message?: string;
  params?: { params?: Partial<UnknownFieldParams> };
  instancePath?: string;
}

/**
 * fastify-type-provider-zod's validator compiler, strict for `body` and `querystring` (a strict copy
 * of each schema, made once per route), with the did-you-mean wording on unknown-key issues.
 */
export const strictValidatorCompiler: typeof validatorCompiler = (route) => {
  const part = route.httpPart;
  if (part !== 'body' && part !== 'querystring') return validatorCompiler(route);
  const validate = validatorCompiler({ ...route, schema: strictCopy(route.schema as AnySchema) as typeof route.schema });
  return (data: unknown) => {
    const result = validate(data) as { error?: CompiledIssue[] };
    if (part === 'querystring' && data && typeof data === 'object' && Object.hasOwn(data, PROTO)) {
      const issue = { [ISSUE_MARK]: true, keyword: 'unrecognized_keys', instancePath: '', schemaPath: '#', message: PROTO_MESSAGE, params: {} };
      return { error: [...(result.error ?? []), issue] } as unknown as ReturnType<ReturnType<typeof validatorCompiler>>;
    }
    for (const issue of result.error ?? []) {
      const params = issue.params?.params;
      if (!params?.unknownField) continue;
      const path = (issue.instancePath ?? '').split('/');
      issue.message = unknownFieldMessage(path[path.length - 1] ?? '', params.known ?? []);
    }
    return result as ReturnType<ReturnType<typeof validatorCompiler>>;
  };
};

/** True for the API's own routes (the API description and probes take no input). */
const isApiRoute = (request: FastifyRequest) => request.routeOptions.url?.startsWith('/api/') ?? false;

/** 422 for each key of an input the operation does not take at all. */
function refuseAll(input: unknown, where: 'body' | 'query') {
  const keys = input && typeof input === 'object' && !Array.isArray(input) ? Object.keys(input) : [];
  if (keys.length === 0) {
    throw validation({ [where]: `this operation takes no ${where === 'body' ? 'body' : 'query parameters'}` });
  }
  throw validation(Object.fromEntries(keys.map((k) => (k === PROTO ? [where, PROTO_MESSAGE] : [k, 'unknown field']))));
}


/**
 * Installs the strict input handling on an app: the validator compiler, a JSON-only body parser in
 * which an empty body is no body, and the hook that fills in `{}` for a missing body and refuses
 * input an operation does not declare.
 */
export function registerStrictInput(app: FastifyInstance) {
  app.setValidatorCompiler(strictValidatorCompiler);

  // JSON only: Fastify's text/plain parser would hand a string to the body schema (a 422 where the
  // README promises 415). An empty JSON body (nothing but JSON whitespace) is no body, like a missing one.
  app.removeAllContentTypeParsers();
  const json = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = String(body);
    if (/^[ \t\n\r]*$/.test(text)) return done(null, undefined);
    return json(request, text, done);
  });

  app.addHook('preValidation', async (request) => {
    if (!isApiRoute(request)) return;
    const schema = request.routeOptions.schema;
    if (schema?.body) {
      if (request.body === undefined) request.body = {};
    } else if (request.body !== undefined) {
      refuseAll(request.body, 'body');
    }
    const query = request.query as Record<string, unknown>;
    if (!schema?.querystring && query && Object.keys(query).length > 0) refuseAll(query, 'query');
  });
}
