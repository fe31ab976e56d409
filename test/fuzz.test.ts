/**
 * Property-based bad-input test. Every operation listed in /api-docs.json (discovered, never
 * hard-coded) gets generated bad requests: malformed path ids, wrong types, missing fields, over-long
 * strings, bad numbers, wrong shapes, huge and deeply nested bodies, malformed JSON, odd content
 * types, random query strings and bad credentials. Every answer must be a 4xx with the error body
 * `{ error: { code, message, fields? } }` (2xx only where the input may legitimately be accepted),
 * never a 5xx, and the server must still be up afterwards.
 *
 * Each category runs its known edge cases (fast-check `examples`) and then FUZZ_RUNS random cases per
 * operation. FUZZ_SEED changes the seed (default below; each property derives its own seed from it and
 * fast-check prints seed and path on failure). A documented route that needs no credentials must say
 * so with `security: []`, or the auth category expects 401 from it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from './fixture.js';
import { JWT_SECRET, type TestApp, type TestOrg } from './helpers.js';
import {
  definitelyInvalid,
  jsonTypeOf,
  operationsOf,
  pct,
  possibleTypes,
  resolve,
  sample,
  staticSegments,
  typeAllowed,
  type JsonSchema,
  type OpenApiDoc,
  type Operation,
} from './fuzz-schema.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_250_601);
const RUNS = Math.max(1, Number(process.env.FUZZ_RUNS ?? 20));
const MB = 1024 * 1024;
const TIMEOUT = 120_000;

/** What a response must look like. Without `status`, any 4xx is fine. */
interface Expectation {
  status?: number[];
  /** A 2xx is acceptable (the input may be valid). */
  mayAccept?: boolean;
  /** 422 `fields` must name these paths (or a parent or child of them). */
  fields?: string[];
  /** 422 `fields` entries (by exact path) whose message must match. */
  messages?: Record<string, RegExp>;
}

interface Req {
  method: string;
  url: string;
  headers?: Record<string, string>;
  payload?: string | Readable;
  /** Leave out the admin key. */
  noAuth?: boolean;
}

interface Res {
  statusCode: number;
  body: string;
  headers: Record<string, unknown>;
}

const CODE_FOR: Record<number, string[]> = {
  400: ['BAD_REQUEST'],
  401: ['UNAUTHORIZED'],
  403: ['FORBIDDEN'],
  404: ['NOT_FOUND'],
  409: ['CONFLICT', 'INVALID_TRANSITION'],
  413: ['PAYLOAD_TOO_LARGE'],
  415: ['UNSUPPORTED_MEDIA_TYPE'],
  422: ['VALIDATION_ERROR'],
  429: ['RATE_LIMITED'],
};

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const JSON_CT = { 'content-type': 'application/json' };
const printableChar = fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c));
const printable = (maxLength = 300) => fc.string({ unit: printableChar, maxLength });
const b64url = (maxLength = 60) =>
  fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split('')), maxLength });

/** Date-times the zod format admits but that are out of range once normalised to UTC, plus near misses. */
const DATE_EDGES = [
  '0000-01-01T00:00:00Z', '9999-12-31T23:59:59-23:59', '0001-01-01T00:00:00+23:59', '9999-12-31T23:59:59.999Z', '2024-02-30T00:00:00Z',
  '2024-01-01', '1970-01-01T00:00:00Z', '2024-01-01T00:00:00.1234567891234Z', '2024-13-01T00:00:00Z', '2024-01-01T24:00:00Z', 'now', '-1',
];
const SOME_UUID = '6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f';

/** Edge strings for a string schema: empty, NUL, unicode, over-long, and by format (date-times, uuids) or enum. */
function stringEdges(s: JsonSchema): string[] {
  const out = ['', ' ', '\u0000', 'a\u0000b', "' OR 1=1 --", '😀', '\ud800', '\u202e\u200b', '%00'];
  if (s.maxLength !== undefined) out.push('a'.repeat(s.maxLength + 1), 'é'.repeat(s.maxLength + 1), '😀'.repeat(s.maxLength + 1));
  else out.push('x'.repeat(100_000));
  if (s.minLength) out.push('a'.repeat(s.minLength - 1));
  if (s.format === 'date-time') out.push(...DATE_EDGES);
  if (s.format === 'uuid') {
    out.push(SOME_UUID.toUpperCase(), `${SOME_UUID}\u0000`, SOME_UUID.replace(/-/g, ''), `{${SOME_UUID}}`, '0'.repeat(36), '-'.repeat(36), 'g'.repeat(36));
  }
  for (const v of s.enum ?? []) out.push(String(v).toUpperCase(), ` ${String(v)}`, `${String(v)}\u0000`, `${String(v)}x`);
  return [...new Set(out)];
}

/** Edge numbers as JSON text (1e999 parses to Infinity), including the schema's own bounds +- 1 and + 0.5. */
function numberEdges(s: JsonSchema): string[] {
  const out = [
    '1e999', '-1e999', '1e308', '-1e308', '9007199254740993', '18446744073709551616', '-9223372036854775809', '1e-300', '-0', '0.5',
    '1.0000001', '-1', '0', '-2147483649', '2147483648', '1e21', '"5"', '"1e3"', '"0x10"', '""', '"NaN"',
  ];
  for (const b of [s.minimum, s.maximum]) if (typeof b === 'number') out.push(JSON.stringify(b - 1), JSON.stringify(b + 1), JSON.stringify(b + 0.5));
  return [...new Set(out)];
}

/** Edge numbers as query-string text (coerced with Number() by the API), including the bounds +- 1. */
function queryNumberEdges(s: JsonSchema): string[] {
  const out = ['-1', '0', '1.5', 'abc', '', '1e3', 'NaN', 'Infinity', '-Infinity', ' 5', '0x10', '1e309', '-0', '+1', '٣', '1,000', '\u0000', '9'.repeat(400), '2147483648'];
  for (const b of [s.minimum, s.maximum]) if (typeof b === 'number') out.push(String(b - 1), String(b + 1), String(b + 0.5));
  return [...new Set(out)];
}

/** One canonical value of each JSON type ("number" is a non-integer). */
const CANONICAL: Record<string, unknown> = { string: 'x', integer: 7, number: 1.5, boolean: true, null: null, array: [], object: {} };

let t: TestApp;
let org: TestOrg;
let doc: OpenApiDoc;
let ops: Operation[];
let statics: Set<string>;
const counts = new Map<string, Map<string, number>>();
let total = 0;

const opKey = (op: Operation) => `${op.method} ${op.template}`;
const clip = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

/** Sends one request (with the admin key unless told otherwise) and counts it. */
async function send(category: string, op: Operation, r: Req): Promise<Res> {
  const per = counts.get(category) ?? new Map<string, number>();
  counts.set(category, per);
  per.set(opKey(op), (per.get(opKey(op)) ?? 0) + 1);
  total += 1;
  const headers = { ...(r.noAuth ? {} : { 'x-api-key': org.key }), ...(r.headers ?? {}) };
  const res = await t.app.inject({ method: r.method as 'GET', url: r.url, headers, ...(r.payload !== undefined ? { payload: r.payload } : {}) });
  return { statusCode: res.statusCode, body: res.body, headers: res.headers as Record<string, unknown> };
}

/** Throws (with the request and response in the message) unless `res` meets `e`. */
function check(r: Req, res: Res, e: Expectation) {
  const where = `${r.method} ${clip(r.url, 200)} -> ${res.statusCode} ${clip(res.body)}`;
  const fail = (why: string): never => {
    throw new Error(`${why}\n  ${where}`);
  };
  if (res.statusCode >= 500) fail('server error');
  // Partial success (POST /traces/ingest): items are validated one by one, so a bad item is
  // rejected by a 202 that reports it in `failed` and `errors`, not by a 422 for the whole request.
  if (res.statusCode === 202) {
    try {
      const b = JSON.parse(res.body) as { failed?: unknown; errors?: unknown };
      if (typeof b.failed === 'number' && b.failed > 0 && Array.isArray(b.errors) && b.errors.length === b.failed) return;
    } catch {
      /* not a partial-success body: judged below */
    }
  }
  if (res.statusCode < 400) {
    if (!e.mayAccept) fail('accepted clearly invalid input');
    return;
  }
  if (e.status && !e.status.includes(res.statusCode)) fail(`expected status ${e.status.join(' or ')}`);
  if (!String(res.headers['content-type'] ?? '').startsWith('application/json')) fail('error is not JSON');
  let body: { error?: { code?: unknown; message?: unknown; fields?: unknown } };
  try {
    body = JSON.parse(res.body);
  } catch {
    return fail('error body does not parse');
  }
  const err = body?.error;
  if (!err || typeof err.code !== 'string' || typeof err.message !== 'string') fail('error body is not { error: { code, message } }');
  const codes = CODE_FOR[res.statusCode];
  if (codes && !codes.includes(err!.code as string)) fail(`code ${String(err!.code)} does not match status`);
  if (/\n\s+at .+:\d+|Failed query|params:/.test(res.body)) fail('error leaks a stack or SQL');
  if (res.statusCode === 422) {
    const f = err!.fields;
    if (!f || typeof f !== 'object' || Array.isArray(f) || !Object.values(f).every((v) => typeof v === 'string')) {
      fail('422 without fields: { path: message }');
    }
    const keys = Object.keys(f as object);
    // An empty `fields` is the database's safety net catching what validation let through: a gap to fix.
    if (keys.length === 0) fail('422 names no field (validation let a value through to the database)');
    for (const want of e.fields ?? []) {
      if (!keys.some((k) => k === want || want.startsWith(`${k}.`) || k.startsWith(`${want}.`))) fail(`fields do not name ${want}`);
    }
    for (const [path, re] of Object.entries(e.messages ?? {})) {
      const got = (f as Record<string, string>)[path];
      if (!re.test(got ?? '')) fail(`fields.${path} is ${JSON.stringify(got)}, expected ${re}`);
    }
  }
}

/** A deterministic seed per property, so that operations sharing an arbitrary do not replay the same cases. */
function seedFor(category: string, op: Operation): number {
  let h = SEED | 0;
  for (const ch of `${category} ${opKey(op)}`) h = (Math.imul(h, 31) + ch.charCodeAt(0)) | 0;
  return h;
}

/** Runs `body` for every operation, then fails with all the operations' failures at once (not just the first). */
async function eachOp(list: Operation[], body: (op: Operation) => Promise<void>) {
  const failures: string[] = [];
  for (const op of list) {
    try {
      await body(op);
    } catch (err) {
      failures.push(`${opKey(op)}:\n${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (failures.length) throw new Error(`${failures.length} operation(s) failed\n\n${failures.join('\n\n')}`);
}

/**
 * Runs one property: every one of `examples` (the known edge cases, always run) and then `runs`
 * random values of `arb` become requests that must meet their expectations.
 */
async function prop<T>(
  category: string,
  op: Operation,
  arb: fc.Arbitrary<T>,
  examples: T[],
  build: (x: T) => Promise<[Req, Expectation]> | [Req, Expectation],
  runs = RUNS,
) {
  await fc.assert(
    fc.asyncProperty(arb, async (x) => {
      const [r, e] = await build(x);
      check(r, await send(category, op, r), e);
    }),
    // fast-check counts examples within numRuns.
    { numRuns: examples.length + runs, seed: seedFor(category, op), examples: examples.map((x) => [x] as [T]) },
  );
}

// ---------------------------------------------------------------------------------------------
// Building requests from the document

/** A value of the path parameter that can exist but does not (an unknown uuid for uuid ids). */
function unknownParam(op: Operation, name: string): string {
  const p = op.pathParams.find((x) => x.name === name)!;
  const s = sample(doc, p.schema);
  return String(s.value ?? randomUUID());
}

/** Plausible values for the required query parameters, so that default requests get past them. */
function requiredQuery(op: Operation): string {
  return op.query
    .filter((q) => q.required)
    .map((q) => `${pct(q.name)}=${pct(String(sample(doc, q.schema).value ?? 'fuzz'))}`)
    .join('&');
}

/** The URL of an operation; `raw` holds already-encoded values for some path parameters. */
function urlOf(op: Operation, raw: Record<string, string> = {}, query = requiredQuery(op)): string {
  const path = op.template.replace(/\{([^}]+)\}/g, (_, n: string) => raw[n] ?? pct(unknownParam(op, n)));
  return query ? `${path}?${query}` : path;
}

interface Target {
  path: string[];
  schema: JsonSchema;
}

/** The branch of a (possibly nullable) schema that has the given JSON type. */
function branchOf(s: JsonSchema, type: string): JsonSchema | undefined {
  const r = resolve(doc, s);
  for (const b of r.anyOf ?? r.oneOf ?? [r]) {
    const rb = resolve(doc, b);
    if (possibleTypes(doc, rb)?.has(type)) return rb;
  }
  return undefined;
}

/** Body locations to aim at: top-level properties, first array items and nested properties (two levels). */
function targetsOf(schema: JsonSchema | undefined): Target[] {
  const out: Target[] = [];
  const walk = (s: JsonSchema, path: string[], depth: number) => {
    const obj = branchOf(s, 'object');
    for (const [k, ps] of Object.entries(obj?.properties ?? {})) {
      out.push({ path: [...path, k], schema: ps });
      if (depth >= 1) continue;
      const arr = branchOf(ps, 'array');
      if (arr?.items) {
        out.push({ path: [...path, k, '0'], schema: arr.items });
        walk(arr.items, [...path, k, '0'], depth + 1);
      }
      walk(ps, [...path, k], depth + 1);
    }
  };
  if (schema) walk(schema, [], 0);
  return out;
}

/** A copy of `base` with `value` written at `path` (containers created as needed). */
function setAt(base: unknown, path: string[], value: unknown): unknown {
  const root = base && typeof base === 'object' ? structuredClone(base) : {};
  let cur = root as Record<string, unknown>;
  path.forEach((seg, i) => {
    if (i === path.length - 1) {
      cur[seg] = value;
      return;
    }
    const next = cur[seg];
    if (!next || typeof next !== 'object') cur[seg] = /^\d+$/.test(path[i + 1]) ? [] : {};
    cur = cur[seg] as Record<string, unknown>;
  });
  return root;
}

const PLACEHOLDER = '"__fuzz_placeholder__"';

/** JSON text of `base` with raw JSON text `rawValue` at `path` (for values JSON.stringify cannot write). */
function withRaw(base: unknown, path: string[], rawValue: string): string {
  if (path.length === 0) return rawValue;
  return JSON.stringify(setAt(base, path, JSON.parse(PLACEHOLDER))).replace(PLACEHOLDER, () => rawValue);
}

const baselineOf = (op: Operation) => (op.body ? sample(doc, op.body).value : undefined);

/** The default request of an operation: unknown ids, baseline body, admin key. */
function requestOf(op: Operation, payload?: string, extra: Partial<Req> = {}): Req {
  const body = payload ?? (op.body ? JSON.stringify(baselineOf(op)) : undefined);
  return {
    method: op.method,
    url: urlOf(op),
    ...(body !== undefined ? { payload: body, headers: { ...JSON_CT } } : {}),
    ...extra,
  };
}

/** Expectation for a body we built: 422 naming `fields` when the schema surely rejects it, else anything but 5xx. */
function bodyExpectation(op: Operation, text: string, fields: string[] = []): Expectation {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { status: [400] };
  }
  if (op.body && definitelyInvalid(doc, op.body, value)) return { status: [422], fields };
  return { mayAccept: true };
}

const JSON_TYPES = Object.keys(CANONICAL);

/** Any JSON value of one JSON type ("number" means a non-integer). */
function valueOfType(type: string): fc.Arbitrary<unknown> {
  switch (type) {
    case 'string':
      return fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('', '0', 'true', 'null', '[]', '{}'));
    case 'integer':
      return fc.oneof(fc.integer(), fc.constantFrom(0, -1, 1, Number.MAX_SAFE_INTEGER));
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isInteger(x));
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 });
    default:
      return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
  }
}

// ---------------------------------------------------------------------------------------------

// The file's app and organization come from the fixture (test/fixture.ts), which also closes the app.
beforeAll(async ({ app, org: o }) => {
  t = app;
  org = o;
  const res = await t.app.inject({ method: 'GET', url: '/api-docs.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
  ops = operationsOf(doc);
  statics = staticSegments(doc);
  console.log(`fuzz: seed ${SEED}, ${RUNS} runs per property, ${ops.length} operations from /api-docs.json`);
}, TIMEOUT);

afterAll(async () => {
  if (!t) return;
  const cats = [...counts.keys()];
  const lines = cats.map((c) => {
    const per = counts.get(c)!;
    const n = [...per.values()].reduce((a, b) => a + b, 0);
    return `  ${c.padEnd(16)} ${String(per.size).padStart(3)} operations x ${String(Math.round(n / Math.max(1, per.size))).padStart(3)} cases = ${n}`;
  });
  console.log(`fuzz summary (seed ${SEED}): ${ops?.length ?? 0} operations, ${cats.length} categories, ${total} requests\n${lines.join('\n')}`);
});

describe('fuzz: every documented operation rejects bad input with a 4xx error body', () => {
  it('found operations to fuzz', () => {
    expect(ops.length).toBeGreaterThan(0);
    for (const op of ops) expect(op.template.startsWith('/')).toBe(true);
  });

  it('bad credentials are 401 UNAUTHORIZED', async () => {
    const secrets = { right: new TextEncoder().encode(JWT_SECRET), wrong: new TextEncoder().encode(`wrong-${JWT_SECRET}`) };
    type Jwt = { secret: 'right' | 'wrong'; claims: Record<string, unknown>; exp?: number; nbf?: number; alg?: 'none' };
    type Auth = { headers: Record<string, string> } | { jwt: Jwt };
    const now = Math.floor(Date.now() / 1000);
    const good = { sub: 'fuzz-user', org_id: org.orgId, role: 'admin' };
    const right = (c: Record<string, unknown>): Auth => ({ jwt: { secret: 'right', claims: { ...good, ...c } } });
    const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    // Tokens that verify (or nearly) but must still be refused.
    const jwtEdges: Auth[] = [
      { jwt: { secret: 'wrong', claims: good } },
      { jwt: { secret: 'right', claims: good, exp: now - 3600 } },
      { jwt: { secret: 'right', claims: good, nbf: now + 3600 } },
      { jwt: { secret: 'right', claims: good, alg: 'none' } },
      { jwt: { secret: 'right', claims: { org_id: org.orgId, role: 'admin' } } },
      right({ org_id: randomUUID() }),
      ...['-'.repeat(36), 'f'.repeat(36), 'g'.repeat(36), '0'.repeat(36), `${org.orgId}\u0000`, org.orgId.replace(/-/g, ''), 'x', 42, null, [org.orgId], {}].map((o) => right({ org_id: o })),
      ...['ADMIN', 'owner', 'root', '', 7, null].map((role) => right({ role })),
      ...['', 'x'.repeat(256), 'a\u0000b', '\u0000', 1, null, {}, []].map((sub) => right({ sub })),
      ...['a\u0000@example.com', '\u0000'].map((email) => right({ email })),
      right({ name: 'n\u0000me' }),
    ];
    const headerEdges: Auth[] = [
      {},
      { 'x-api-key': '' },
      { 'x-api-key': ' ' },
      { 'x-api-key': 'svc_prod_' },
      { 'x-api-key': `svc_prod_${'a'.repeat(43)}` },
      { 'x-api-key': `svc_prod_${'a'.repeat(300)}` },
      { 'x-api-key': org.key.toUpperCase() },
      { 'x-api-key': org.key.slice(0, -1) },
      { authorization: '' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' },
      { authorization: 'bearer' },
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: `Token ${org.key}` },
      { authorization: `Bearer ${org.key} x` },
      { authorization: 'Bearer null' },
      { authorization: 'Bearer svc_prod_' },
      { authorization: 'Bearer a.b.c' },
      { authorization: `Bearer ${enc({ alg: 'HS256', typ: 'JWT' })}.${enc(good)}.` },
      { authorization: `Bearer ${enc({ alg: 'HS256', typ: 'JWT' })}.e30.${'A'.repeat(43)}` },
    ].map((headers) => ({ headers: headers as Record<string, string> }));
    const h = (x: fc.Arbitrary<Record<string, string>>) => x.map((headers): Auth => ({ headers }));
    const arb: fc.Arbitrary<Auth> = fc.oneof(
      h(printable().map((k) => ({ 'x-api-key': k }))),
      h(fc.tuple(fc.constantFrom('svc_prod_', 'svc_stg_', 'svc_dev_', 'svc_', 'SVC_PROD_'), printable()).map(([p, s]) => ({ 'x-api-key': p + s }))),
      h(fc.constant(0).map(() => ({ 'x-api-key': `svc_prod_${randomBytes(32).toString('base64url')}` }))),
      h(printable().map((a) => ({ authorization: a }))),
      h(printable().map((a) => ({ authorization: `Bearer ${a}` }))),
      h(fc.tuple(fc.constantFrom('svc_prod_', 'svc_stg_', 'svc_dev_'), printable(260)).map(([p, s]) => ({ authorization: `Bearer ${p}${s.replace(/\s/g, '')}` }))),
      h(fc.tuple(b64url(), b64url(), b64url()).map(([a, b, c]) => ({ authorization: `Bearer ${a}.${b}.${c}` }))),
      h(fc.tuple(b64url(200), b64url()).map(([b, c]) => ({ authorization: `Bearer ${enc({ alg: 'HS256', typ: 'JWT' })}.${b}.${c}` }))),
      printable(40).map((o) => right({ org_id: o })),
      printable(20).filter((r) => !['viewer', 'developer', 'admin'].includes(r)).map((role) => right({ role })),
      fc.constantFrom(...jwtEdges),
    );
    await eachOp(ops.filter((o) => !o.isPublic), async (op) => {
      await prop('auth', op, arb, [...headerEdges, ...jwtEdges], async (a) => {
        let headers: Record<string, string>;
        if ('jwt' in a) {
          const j = a.jwt;
          let token: string;
          if (j.alg === 'none') token = `${enc({ alg: 'none', typ: 'JWT' })}.${enc(j.claims)}.`;
          else {
            const s = new SignJWT(j.claims as Record<string, never>).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime(j.exp ?? '10m');
            if (j.nbf) s.setNotBefore(j.nbf);
            token = await s.sign(secrets[j.secret]);
          }
          headers = { authorization: `Bearer ${token}` };
        } else headers = a.headers;
        const r = requestOf(op, undefined, { noAuth: true });
        return [{ ...r, headers: { ...(r.headers ?? {}), ...headers } }, { status: [401] }];
      });
    });
  }, TIMEOUT);

  it('malformed or unknown path ids are 404 NOT_FOUND', async () => {
    type Id = { raw: string; decoded: string | null };
    const enc = (s: string): Id => ({ raw: pct(s), decoded: s });
    const usable = (x: Id) => x.decoded !== '.' && x.decoded !== '..' && x.decoded !== '' && !statics.has(x.decoded ?? '');
    const edges: Id[] = [
      ...[' ', '  ', '\t', '\n', '\u0000', 'null', 'undefined', '0', '-1', 'NaN', 'true', '[]', '{}', '\u200b', '\ufeff', 'é', '😀', '\u202e', '%', '\ud800'].map(enc),
      ...["' OR '1'='1", '1; DROP TABLE api_keys; --', "' UNION SELECT * FROM api_keys --", "1' AND pg_sleep(5)--", '$1', '\\x00'].map(enc),
      ...[37, 200, 201, 5000].map((n) => enc('a'.repeat(n))),
      enc('😀'.repeat(60)),
      ...[SOME_UUID.toUpperCase(), `${SOME_UUID}\u0000`, SOME_UUID.replace(/-/g, ''), `{${SOME_UUID}}`, `${SOME_UUID}0`, SOME_UUID.slice(1), ` ${SOME_UUID}`, `${SOME_UUID}/x`, '0'.repeat(36), '-'.repeat(36), 'g'.repeat(36), '00000000-0000-0000-0000-000000000000'].map(enc),
      ...['%', '%zz', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '%FF', 'abc%', '%%', '%2', '%u0041', '%00%'].map((raw): Id => ({ raw, decoded: null })),
      enc(SOME_UUID),
    ].filter(usable);
    const ids: fc.Arbitrary<Id> = fc
      .oneof(
        fc.string({ minLength: 1, maxLength: 60 }).map(enc),
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).map(enc),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).map(enc),
        fc.tuple(fc.integer({ min: 37, max: 6000 }), fc.constantFrom('a', '0', 'é', '😀', '-')).map(([n, c]) => enc(c.repeat(n))),
        fc.uuid().map(enc),
        fc.constantFrom(...edges),
      )
      .filter(usable);
    await eachOp(ops.filter((o) => o.pathParams.length > 0), async (op) => {
      const examples = op.pathParams.flatMap((p) => edges.map((id): [typeof p, Id] => [p, id]));
      await prop('path', op, fc.tuple(fc.constantFrom(...op.pathParams), ids), examples, ([p, id]) => {
        const r = { ...requestOf(op), url: urlOf(op, { [p.name]: id.raw }) };
        const s = resolve(doc, p.schema);
        if (id.decoded === null || definitelyInvalid(doc, s, id.decoded)) return [r, { status: [404] }];
        // A well-formed id that names nothing: 404 (or 422 first when the baseline body is not valid).
        if (s.format || s.pattern || s.enum) return [r, { status: op.body ? [404, 422] : [404] }];
        return [r, { mayAccept: true }];
      });
    });
  }, TIMEOUT);

  it('wrong JSON types for body properties are 422 naming the property', async () => {
    await eachOp(ops.filter((o) => o.body), async (op) => {
      const targets = targetsOf(op.body).filter((x) => possibleTypes(doc, x.schema) !== null);
      if (targets.length === 0) return;
      const base = baselineOf(op);
      const wrongTypes = (tg: Target) => JSON_TYPES.filter((ty) => !typeAllowed(possibleTypes(doc, tg.schema), ty));
      const examples = targets.flatMap((tg) => wrongTypes(tg).map((ty) => ({ tg, v: CANONICAL[ty] })));
      const arb = fc.constantFrom(...targets).chain((tg) => fc.constantFrom(...wrongTypes(tg)).chain(valueOfType).map((v) => ({ tg, v })));
      await prop('wrong-type', op, arb, examples, ({ tg, v }) => {
        const text = JSON.stringify(setAt(base, tg.path, v));
        return [requestOf(op, text), { status: [422], fields: [tg.path.join('.')] }];
      });
    });
  }, TIMEOUT);

  it('missing required fields are 422 naming them', async () => {
    await eachOp(ops.filter((o) => o.body), async (op) => {
      const required = branchOf(op.body!, 'object')?.required ?? [];
      if (required.length === 0) return;
      const base = baselineOf(op) as Record<string, unknown>;
      type M = { drop: string[]; absent: boolean };
      const examples: M[] = [...required.map((r) => ({ drop: [r], absent: false })), { drop: required, absent: false }, { drop: required, absent: true }];
      await prop('missing-field', op, fc.subarray(required, { minLength: 1 }).map((drop): M => ({ drop, absent: false })), examples, ({ drop, absent }) => {
        if (absent) return [{ ...requestOf(op), payload: undefined, headers: {} }, { status: [422] }];
        const body = Object.fromEntries(Object.entries(base).filter(([k]) => !drop.includes(k)));
        return [requestOf(op, JSON.stringify(body)), { status: [422], fields: drop }];
      });
    });
  }, TIMEOUT);

  it('over-long, NUL-bearing, out-of-range and odd strings are 422 or stored, never a 5xx', async () => {
    await eachOp(ops.filter((o) => o.body), async (op) => {
      const targets = targetsOf(op.body).filter((x) => typeAllowed(possibleTypes(doc, x.schema), 'string'));
      if (targets.length === 0) return;
      const base = baselineOf(op);
      const stringSchema = (tg: Target) => branchOf(tg.schema, 'string') ?? resolve(doc, tg.schema);
      type S = { tg: Target; v: string };
      const examples: S[] = targets.flatMap((tg) => stringEdges(stringSchema(tg)).map((v) => ({ tg, v })));
      const arb: fc.Arbitrary<S> = fc.constantFrom(...targets).chain((tg) => {
        const max = stringSchema(tg).maxLength ?? 10_000;
        return fc
          .oneof(
            fc.tuple(fc.integer({ min: 1, max: 3000 }), fc.constantFrom('a', 'é', '😀', ' ', '\\')).map(([extra, c]) => c.repeat(max + extra)),
            fc.integer({ min: 20_000, max: 200_000 }).map((n) => 'x'.repeat(n)),
            fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })).map(([a, b]) => `${a}\u0000${b}`),
            fc.string({ unit: 'binary', maxLength: 50 }),
            fc.constantFrom(...stringEdges(stringSchema(tg))),
          )
          .map((v) => ({ tg, v }));
      });
      await prop('strings', op, arb, examples, ({ tg, v }) => {
        const text = JSON.stringify(setAt(base, tg.path, v));
        // Every string rejects NUL (Postgres cannot store it): a 422, wherever it is.
        return [requestOf(op, text), v.includes('\u0000') ? { status: [422], fields: [tg.path.join('.')] } : bodyExpectation(op, text, [tg.path.join('.')])];
      });
    });
  }, TIMEOUT);

  it('out-of-range, non-finite, fractional and stringly numbers are 422 when invalid', async () => {
    await eachOp(ops.filter((o) => o.body), async (op) => {
      const targets = targetsOf(op.body).filter((x) => {
        const ty = possibleTypes(doc, x.schema);
        return !!ty && (ty.has('integer') || ty.has('number'));
      });
      if (targets.length === 0) return;
      const base = baselineOf(op);
      const numSchema = (tg: Target) => branchOf(tg.schema, 'integer') ?? branchOf(tg.schema, 'number') ?? tg.schema;
      const examples = targets.flatMap((tg) => numberEdges(numSchema(tg)).map((raw) => ({ tg, raw })));
      const arb = fc.constantFrom(...targets).chain((tg) =>
        fc
          .oneof(fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => JSON.stringify(x)), fc.integer().map(String), fc.constantFrom(...numberEdges(numSchema(tg))))
          .map((raw) => ({ tg, raw })),
      );
      await prop('numbers', op, arb, examples, ({ tg, raw }) => {
        const text = withRaw(base, tg.path, raw);
        return [requestOf(op, text), bodyExpectation(op, text, [tg.path.join('.')])];
      });
    });
  }, TIMEOUT);

  it('arrays and primitives where objects are expected are 422', async () => {
    await eachOp(ops.filter((o) => o.body), async (op) => {
      const base = baselineOf(op);
      const objectTargets = targetsOf(op.body).filter((x) => branchOf(x.schema, 'object'));
      type Sh = { path: string[]; raw: string };
      const rootEdges = ['[]', '[{}]', '[[]]', 'null', '0', '-1', 'true', 'false', '"x"', '""', JSON.stringify([base]), JSON.stringify([base, base])];
      const examples: Sh[] = [...rootEdges.map((raw) => ({ path: [], raw })), ...objectTargets.flatMap((tg) => ['[]', '[{}]', '"x"', '1'].map((raw) => ({ path: tg.path, raw })))];
      const arb = fc.oneof(
        fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }).map((v): Sh => ({ path: [], raw: JSON.stringify(v) })),
        fc.oneof(fc.string(), fc.integer(), fc.boolean()).map((v): Sh => ({ path: [], raw: JSON.stringify(v) })),
        fc.constantFrom(...examples),
      );
      await prop('shape', op, arb, examples, ({ path, raw }) => {
        const text = withRaw(base, path, raw);
        return [requestOf(op, text), bodyExpectation(op, text, path.length ? [path.join('.')] : [])];
      });
    });
  }, TIMEOUT);

  it('bodies of a few MB are 413 PAYLOAD_TOO_LARGE', async () => {
    type H = { size: number; style: 'string' | 'array' | 'spaces'; stream: boolean };
    const examples: H[] = [
      { size: 2 * MB, style: 'string', stream: false },
      { size: 3 * MB, style: 'array', stream: true },
      { size: 2 * MB + 1, style: 'spaces', stream: false },
      { size: 4 * MB, style: 'string', stream: true },
    ];
    const arb: fc.Arbitrary<H> = fc.record({ size: fc.integer({ min: 2 * MB, max: 4 * MB }), style: fc.constantFrom('string', 'array', 'spaces'), stream: fc.boolean() });
    await eachOp(ops.filter((o) => BODY_METHODS.has(o.method)), async (op) => {
      await prop('huge', op, arb, examples, ({ size, style, stream }) => {
        const text =
          style === 'string' ? `{"fuzz":"${'x'.repeat(size)}"}` : style === 'array' ? `[${'{"a":1},'.repeat(Math.ceil(size / 8))}{"a":1}]` : `${' '.repeat(size)}{}`;
        const payload = stream
          ? Readable.from(
              (function* () {
                for (let i = 0; i < text.length; i += 64 * 1024) yield Buffer.from(text.slice(i, i + 64 * 1024));
              })(),
            )
          : text;
        // A route that takes larger bodies (x-body-limit) must still reject this one, but by validation.
        const expect: Expectation = op.bodyLimit && op.bodyLimit > size ? {} : { status: [413] };
        return [requestOf(op, undefined, { payload, headers: { ...JSON_CT } }), expect];
      }, Math.ceil(RUNS / 10));
    });
  }, TIMEOUT);

  it('deeply nested bodies (thousands of levels) are a 4xx, never a crash', async () => {
    type D = { depth: number; kind: 'array' | 'object' | 'mixed'; path: string[] };
    await eachOp(ops.filter((o) => BODY_METHODS.has(o.method)), async (op) => {
      const base = baselineOf(op);
      const paths = [[], ...targetsOf(op.body).map((x) => x.path)];
      const kinds = ['array', 'object', 'mixed'] as const;
      const examples: D[] = [...kinds.map((kind) => ({ depth: 5000, kind, path: [] })), ...paths.slice(1).map((path, i) => ({ depth: 5000, kind: kinds[i % 3], path }))];
      const arb: fc.Arbitrary<D> = fc.record({ depth: fc.integer({ min: 1000, max: 8000 }), kind: fc.constantFrom(...kinds), path: fc.constantFrom(...paths) });
      await prop('deep', op, arb, examples, ({ depth, kind, path }) => {
        const raw =
          kind === 'array'
            ? '['.repeat(depth) + ']'.repeat(depth)
            : kind === 'object'
              ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)
              : '[{"a":'.repeat(depth) + '0' + '}]'.repeat(depth);
        const text = withRaw(base, path, raw);
        return [requestOf(op, text), op.body ? bodyExpectation(op, text, path.length ? [path.join('.')] : []) : { mayAccept: true }];
      }, Math.ceil(RUNS / 4));
    });
  }, TIMEOUT);

  it('malformed JSON (and prototype poisoning) is 400 BAD_REQUEST', async () => {
    // A body of JSON whitespace only is no body (docs/decisions.md "Strict inputs"), not malformed JSON.
    const parses = (s: string) => {
      if (/^[ \t\n\r]*$/.test(s)) return true;
      try {
        JSON.parse(s.replace(/^\uFEFF/, ''));
        return true;
      } catch {
        return false;
      }
    };
    const edges = [
      '{', '}', '[', '{"a":', '{"a":1,}', "{'a':1}", 'NaN', 'Infinity', '-', '01', '{"a":01}', '[1,2', '{"a":undefined}', '{a:1}',
      '"unterminated', '{"a":"\\x41"}', '{"a":"\\u12"}', '\u0000', '{"a":1}garbage', '{"a":1}{"b":2}', '// c\n{}', '{"a":1 /* c */}', 'tru', 'nul',
      '{"a":"\u0001"}', '\u00a0{}', '{"a":1e}', '{"a":.5}', '{"a":+1}', '{"a":0x10}', '\uFEFF\uFEFF{}',
      '{"__proto__":{"isAdmin":true}}', '{"a":{"__proto__":{"x":1}}}', '{"constructor":{"prototype":{"x":1}}}',
    ];
    const cts = ['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'application/json;charset=UTF-8'];
    await eachOp(ops.filter((o) => BODY_METHODS.has(o.method)), async (op) => {
      const baseText = JSON.stringify(baselineOf(op) ?? { a: 1 });
      const texts = fc.oneof(
        fc.string({ maxLength: 100 }).filter((x) => !parses(x)),
        fc.integer({ min: 0, max: Math.max(0, baseText.length - 1) }).map((n) => baseText.slice(0, n)).filter((x) => !parses(x)),
        fc.constantFrom(...edges),
      );
      await prop('malformed-json', op, fc.tuple(texts, fc.constantFrom(...cts)), edges.map((e, i): [string, string] => [e, cts[i % cts.length]]), ([text, c]) => [
        requestOf(op, undefined, { payload: text, headers: { 'content-type': c } }),
        { status: [400] },
      ]);
    });
  }, TIMEOUT);

  it('bodies in other content types are a 4xx', async () => {
    const edges = [
      'text/plain', 'text/plain; charset=utf-8', 'application/xml', 'text/html', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded',
      'application/octet-stream', 'application/jsonx', 'json', '*/*', 'application/json-patch+json', 'application/vnd.api+json',
      'application/problem+json', 'application/json/x', ';', 'a/b; c=d', 'application/json; charset=utf-16', 'application/json; charset=latin1',
    ];
    await eachOp(ops.filter((o) => o.body && BODY_METHODS.has(o.method)), async (op) => {
      // An invalid body (required fields missing, or a wrong type at the root), so that no content type can make it acceptable.
      const text = JSON.stringify([baselineOf(op)]);
      const ct = fc.oneof(printable(60).filter((x) => !/^\s*(application\/json|text\/plain)/i.test(x)), fc.constantFrom(...edges));
      await prop('content-type', op, ct, edges, (c) => [requestOf(op, undefined, { payload: text, headers: { 'content-type': c } }), {}]);
    });
  }, TIMEOUT);

  it('random and invalid query strings are 422 when a parameter is invalid, never a 5xx', async () => {
    type Pair = { key: string; value: string } | { raw: string };
    const rawEdges = ['%', '%zz', '&&&', '==', '=x', 'a[b]=c', '__proto__=1', 'constructor[prototype][x]=1', 'x=%E0%A4%A', '%00=%00', ';', 'y=1;z=2', 'a=b=c'];
    const isNumeric = (s: JsonSchema) => {
      const ty = possibleTypes(doc, s);
      return !!ty && (ty.has('integer') || ty.has('number'));
    };
    const edgesOf = (s: JsonSchema) => (isNumeric(s) ? queryNumberEdges(s) : stringEdges(s));
    await eachOp(ops.filter((o) => o.method === 'GET' || o.query.length > 0), async (op) => {
      const params = op.query.map((q) => ({ ...q, schema: resolve(doc, q.schema) }));
      const examples: Pair[][] = [
        ...params.flatMap((q) => edgesOf(q.schema).map((value) => [{ key: q.name, value }])),
        ...params.map((q) => [{ key: q.name, value: '1' }, { key: q.name, value: '2' }]),
        rawEdges.map((raw) => ({ raw })),
      ];
      const declared = params.map((q) =>
        fc.oneof(fc.constantFrom(...edgesOf(q.schema)), fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.integer().map(String)).map((value): Pair => ({ key: q.name, value })),
      );
      const pair: fc.Arbitrary<Pair> = fc.oneof(
        ...declared.map((arbitrary) => ({ arbitrary, weight: 4 })),
        fc.tuple(fc.string({ maxLength: 12 }), fc.string({ maxLength: 30 })).map(([key, value]): Pair => ({ key, value })),
        fc.constantFrom(...rawEdges).map((raw): Pair => ({ raw })),
      );
      await prop('query', op, fc.array(pair, { minLength: 1, maxLength: 6 }), examples, (pairs) => {
        const qs = pairs.map((p) => ('raw' in p ? p.raw : `${pct(p.key)}=${pct(p.value)}`)).join('&');
        const r = requestOf(op, undefined, { url: urlOf(op, {}, qs) });
        const bad: string[] = [];
        // A parameter the operation does not declare is refused, named (docs/decisions.md "Strict inputs").
        const declaredNames = new Set(params.map((q) => q.name));
        const unknown = pairs.filter((p): p is { key: string; value: string } => 'key' in p && p.key !== '' && !declaredNames.has(p.key));
        if (unknown.length > 0) return [r, { status: [422], fields: [...new Set(unknown.map((p) => p.key))].filter((k) => !/[./]/.test(k)) }];
        for (const q of params) {
          const values = pairs.filter((p): p is { key: string; value: string } => 'key' in p && p.key === q.name).map((p) => p.value);
          if (values.length === 0) continue;
          if (values.length > 1) {
            if (!possibleTypes(doc, q.schema)?.has('array')) bad.push(q.name);
            continue;
          }
          // Numbers in a query string are coerced with Number() (z.coerce.number()).
          const v = isNumeric(q.schema) ? Number(values[0]) : values[0];
          if (definitelyInvalid(doc, q.schema, v)) bad.push(q.name);
        }
        if (bad.length) return [r, { status: [422], fields: bad }];
        // A raw pair or an empty name may parse into a name the operation does not know (then 422), or into nothing.
        return [r, { mayAccept: true }];
      });
    });
  }, TIMEOUT);

  it('an unknown body field or query parameter is 422 naming it, with a did-you-mean for another case style', async () => {
    // camelCase <-> snake_case, or a capital for a one-word name: "the same name in another case style".
    const restyle = (name: string) =>
      name.includes('_')
        ? name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())
        : /[A-Z]/.test(name)
          ? name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
          : name.charAt(0).toUpperCase() + name.slice(1);
    const didYouMean = (name: string) => new RegExp(`^unknown field \\(did you mean ${name}\\?\\)$`);
    const UNKNOWN = 'fuzzUnknownField';
    // An object is closed unless the document opens it (`additionalProperties: {}` for a looseObject or a record).
    const closed = (o: JsonSchema | undefined): o is JsonSchema => !!o?.properties && (o.additionalProperties === undefined || o.additionalProperties === false);
    await eachOp(ops, async (op) => {
      const cases: Array<[Req, Expectation]> = [];
      const withQuery = (extra: string) => urlOf(op, {}, [requiredQuery(op), extra].filter(Boolean).join('&'));
      cases.push([requestOf(op, undefined, { url: withQuery(`${UNKNOWN}=1`) }), { status: [422], fields: [UNKNOWN], messages: { [UNKNOWN]: /^unknown field$/ } }]);
      for (const q of op.query) {
        const alias = restyle(q.name);
        cases.push([requestOf(op, undefined, { url: withQuery(`${pct(alias)}=1`) }), { status: [422], messages: { [alias]: didYouMean(q.name) } }]);
      }
      if (op.body) {
        const base = baselineOf(op);
        const body = (value: unknown) => requestOf(op, JSON.stringify(value));
        const top = branchOf(op.body, 'object');
        if (closed(top)) {
          cases.push([body(setAt(base, [UNKNOWN], 1)), { status: [422], fields: [UNKNOWN], messages: { [UNKNOWN]: /^unknown field$/ } }]);
          for (const k of Object.keys(top.properties ?? {})) {
            const alias = restyle(k);
            cases.push([body(setAt(base, [alias], 1)), { status: [422], messages: { [alias]: didYouMean(k) } }]);
          }
        }
        // Nested objects that the document says are closed refuse unknown keys too.
        for (const tg of targetsOf(op.body)) {
          const obj = branchOf(tg.schema, 'object');
          if (!closed(obj)) continue;
          const path = [...tg.path, UNKNOWN];
          cases.push([body(setAt(base, path, 1)), { status: [422], fields: [path.join('.')] }]);
        }
      }
      for (const [r, e] of cases) check(r, await send('unknown-field', op, r), e);
    });
  }, TIMEOUT);

  it('the server is still up and the admin key still works', async () => {
    const live = await t.app.inject({ method: 'GET', url: '/livez' });
    expect(live.statusCode).toBe(200);
    // Any documented GET without path or required query parameters must still answer 200 to the admin key.
    const plain = ops.find((o) => o.method === 'GET' && !o.isPublic && o.pathParams.length === 0 && !o.query.some((q) => q.required));
    if (plain) {
      const res = await org.req({ method: 'GET', url: plain.template });
      expect(res.statusCode, `${plain.template} -> ${res.body}`).toBe(200);
      expect(jsonTypeOf(res.json())).toBe('object');
    }
  });
});
