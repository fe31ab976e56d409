/**
 * The served OpenAPI document as a product (docs/decisions.md, "OpenAPI document"): every rule here
 * reads the whole document, so a later domain's routes are held to it without a line of test.
 */
import { z } from 'zod';
import { beforeAll, describe, expect, it } from './fixture.js';
import { lintOpenApi, summarize } from './openapi-lint.js';

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
/** The operationId rule (README, "API description"): `<resource>.<action>`, resource = first path segment after /api/v1 in camelCase. */
const OPERATION_ID = /^[a-z][A-Za-z]*\.[a-z][A-Za-z]*$/;
const camel = (s: string) => s.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

let doc: Json;
let ops: { method: string; path: string; op: Json }[];

beforeAll(async ({ app }) => {
  const res = await app.app.inject({ method: 'GET', url: '/api-docs.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
  ops = Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.entries(item).filter(([m]) => METHODS.includes(m)).map(([method, op]) => ({ method, path, op: op as Json })),
  );
});

const resolve = (s: Json | undefined): Json | undefined => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);
const resolveResponse = (r: Json): Json => (r.$ref ? doc.components.responses[r.$ref.split('/').pop()] : r);

/** Every subschema of `s` (properties, items, compositions), following `$ref`s once each. */
function walk(s: Json | undefined, visit: (s: Json, key: string) => void, seen = new Set<Json>(), key = ''): void {
  const r = resolve(s);
  if (!r || seen.has(r)) return;
  seen.add(r);
  visit(r, key);
  for (const [k, p] of Object.entries((r.properties ?? {}) as Record<string, Json>)) walk(p, visit, seen, k);
  for (const sub of [r.items, typeof r.additionalProperties === 'object' ? r.additionalProperties : undefined, ...(r.anyOf ?? []), ...(r.oneOf ?? []), ...(r.allOf ?? [])]) {
    if (sub) walk(sub, visit, seen, key);
  }
}

describe('operations', () => {
  it('each has a unique operationId by the rule, a one-line summary and its own description', () => {
    expect(ops.length).toBeGreaterThanOrEqual(53);
    const ids = ops.map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, op } of ops) {
      const resource = camel(path.replace(/^\/(api\/v1\/)?/, '').split('/')[0]);
      expect(op.operationId, path).toMatch(OPERATION_ID);
      expect(op.operationId.split('.')[0], `${op.operationId} for ${path}`).toBe(resource);
      expect(op.summary, op.operationId).toMatch(/^[^\n]{3,120}$/);
      // The route's own words come before the generated access line.
      const [own] = String(op.description ?? '').split('**Access:**');
      expect(own.trim().length, `${op.operationId} needs a description`).toBeGreaterThan(10);
      expect(op.description, op.operationId).toMatch(/\*\*Access:\*\* /);
    }
  });

  it('access, 401/403/429 and 500 follow the route: public routes say security: []', () => {
    for (const { op } of ops) {
      const codes = Object.keys(op.responses);
      expect(codes, op.operationId).toContain('500');
      if (op.security?.length === 0) expect(codes).not.toContain('401');
      else expect(codes, op.operationId).toEqual(expect.arrayContaining(['401', '403']));
      if (/Not rate limited/.test(op.description)) expect(codes, op.operationId).not.toContain('429');
      else expect(codes, op.operationId).toContain('429');
    }
    expect(byId('apiKeys.create').description).toContain('scope `admin`');
    expect(byId('traces.ingest').description).toMatch(/Agent-scoped keys may call it.*Rate limit class: ingest/);
  });

  it('400/413/415 exactly where the method may carry a body (declared or not), 422 everywhere (an unknown query parameter or an unexpected body), 404 where there is a path id or a lookup', () => {
    for (const { path, method, op } of ops) {
      const codes = Object.keys(op.responses);
      const body = !!op.requestBody || ['post', 'put', 'patch', 'delete'].includes(method);
      for (const c of ['400', '413', '415']) expect(codes.includes(c), `${op.operationId} ${c}`).toBe(body);
      expect(codes, `${op.operationId} 422`).toContain('422');
      if (path.includes('{')) expect(codes, op.operationId).toContain('404');
    }
    expect(Object.keys(byId('agents.list').responses)).not.toContain('404');
    expect(Object.keys(byId('apiKeys.rotate').responses)).toEqual(expect.arrayContaining(['400', '413', '415']));
    expect(Object.keys(byId('agents.list').responses)).not.toContain('415');
  });

  it('409 only where a conflict or an invalid transition can happen', () => {
    const with409 = ops.filter((o) => '409' in o.op.responses).map((o) => o.op.operationId).sort();
    expect(with409).toEqual(['accessGrants.approve', 'accessGrants.deny', 'accessGrants.revoke', 'agents.pause', 'agents.register', 'agents.resume', 'policies.rotateValidatorSecret', 'teams.addMember', 'teams.create', 'teams.update', 'webhooks.redeliver']);
  });

  it('optional bodies are not required (pause, flag), the others are', () => {
    expect(byId('agents.pause').requestBody.required).toBe(false);
    expect(byId('traces.flag').requestBody.required).toBe(false);
    expect(byId('agents.register').requestBody.required).toBe(true);
  });
});

describe('responses', () => {
  it('have real descriptions, X-Request-Id, and rate-limit and alias headers on successes', () => {
    for (const { op } of ops) {
      for (const [status, raw] of Object.entries(op.responses as Record<string, Json>)) {
        const r = resolveResponse(raw);
        expect(r.description, `${op.operationId} ${status}`).toBeTruthy();
        expect(r.description).not.toBe('Default Response');
        expect(Object.keys(r.headers ?? {}), `${op.operationId} ${status}`).toContain('X-Request-Id');
        if (Number(status) < 300) expect(Object.keys(r.headers)).toEqual(expect.arrayContaining(['Deprecation', 'Sunset', 'Link']));
      }
    }
    expect(Object.keys(doc.components.responses.RateLimited.headers)).toEqual(
      expect.arrayContaining(['Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']),
    );
  });

  it('the exports document CSV and JSON bodies, their attachment header and their 4xx', () => {
    for (const id of ['traces.export', 'auditLogs.export']) {
      const op = byId(id);
      expect(Object.keys(op.responses[200].content).sort()).toEqual(['application/json', 'text/csv']);
      expect(op.responses[200].headers).toHaveProperty('Content-Disposition');
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '403', '422']));
    }
  });

  it('timestamps are date-times and fixed sets are enums in every response schema', () => {
    const timestamps: string[] = [];
    for (const { op } of ops) {
      for (const raw of Object.values(op.responses as Record<string, Json>)) {
        for (const media of Object.values((resolveResponse(raw).content ?? {}) as Record<string, Json>)) {
          walk(media.schema, (s, key) => {
            // A nullable timestamp is anyOf [string, null]: each string branch is visited under its key.
            if (/At$|^timestamp$|^bucket$/.test(key) && s.type === 'string') {
              expect(s.format, `${op.operationId} ${key}`).toBe('date-time');
              timestamps.push(key);
            }
          });
        }
      }
    }
    expect(timestamps).toEqual(expect.arrayContaining(['createdAt', 'updatedAt', 'timestamp', 'lastUsedAt', 'signedAt']));
    for (const [name, field] of [['Agent', 'status'], ['Trace', 'status'], ['Trace', 'spanType'], ['ApiKey', 'environment']]) {
      expect(doc.components.schemas[name].properties[field].enum, `${name}.${field}`).toBeDefined();
    }
  });

  it('the main operations carry examples', () => {
    expect(byId('agents.register').requestBody.content['application/json'].example).toMatchObject({ agentId: expect.any(String) });
    expect(byId('agents.register').responses[201].content['application/json'].example.data.agentId).toBeDefined();
    expect(byId('traces.ingest').requestBody.content['application/json'].example.traces).toHaveLength(2);
    expect(byId('traces.ingest').responses[202].content['application/json'].example).toMatchObject({ accepted: 1, failed: 1 });
    expect(byId('traces.list').responses[200].content['application/json'].example.data).toHaveLength(1);
    expect(byId('apiKeys.create').responses[201].content['application/json'].example.data.key).toMatch(/^svc_prod_/);
  });
});

describe('components', () => {
  it('one per schema, named as users would, none unused', () => {
    const names = Object.keys(doc.components.schemas);
    for (const n of names) {
      expect(n).not.toMatch(/InputInput$/);
      expect(names, `${n} has a twin`).not.toContain(`${n}Input`);
    }
    expect(names).toEqual(expect.arrayContaining(['Agent', 'RegisterAgentInput', 'Trace', 'IngestTraceItem', 'Error']));
    const text = JSON.stringify({ paths: doc.paths, responses: doc.components.responses, schemas: doc.components.schemas });
    for (const n of names) {
      const referenced = text.includes(`"#/components/schemas/${n}"`);
      expect(referenced, `${n} is unused`).toBe(true);
    }
  });

  it('request objects are closed (additionalProperties false) unless zod leaves them open (z.looseObject)', () => {
    let objects = 0;
    for (const { op } of ops) {
      const schema = op.requestBody?.content['application/json'].schema;
      walk(schema, (s) => {
        if (s.type !== 'object') return;
        objects++;
        expect(s.additionalProperties, `${op.operationId}: an object without additionalProperties`).toBeDefined();
      });
    }
    expect(objects).toBeGreaterThan(20);
    // Where the zod schema accepts unknown fields (ingest items become loose), the document says so too.
    for (const [id, schema] of z.globalRegistry._idmap) {
      const documented = doc.components.schemas[id];
      if (!documented) continue;
      const zodSays = (z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json).additionalProperties;
      if (zodSays !== undefined && zodSays !== false) expect(documented.additionalProperties, id).not.toBe(false);
    }
  });
});

describe('lint', () => {
  it('Spectral (spectral:oas) and Redocly (recommended) report no error or warning beyond the configured rules', async () => {
    const findings = (await lintOpenApi(doc)).filter((f) => f.severity !== 'info');
    expect(summarize(findings)).toEqual([]);
  }, 120_000);
});

function byId(id: string): Json {
  const found = ops.find((o) => o.op.operationId === id);
  if (!found) throw new Error(`no operation ${id}`);
  return found.op;
}
