/**
 * Deny by default (docs/decisions.md, "Authentication and authorization"): every route declares its
 * access or the app does not start, and every documented route follows the role and scope rules of
 * contract.md ("Principals, roles and scopes"). Expectations come from those rules, written out
 * below by path, never from the routes' own declarations.
 */
import { randomUUID } from 'node:crypto';
import { buildApp } from '../src/app.js';
import { parseConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { memoryState } from '../src/lib/shared-state.js';
import { beforeAll, describe, expect, it } from './fixture.js';
import { createKey, type TestApp } from './helpers.js';

type Role = 'viewer' | 'developer' | 'admin';
const RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2 };
const SEVEN = ['agent:read', 'agent:write', 'trace:read', 'trace:write', 'policy:read', 'policy:write', 'analytics:read'];

/** contract.md's scope per route (null: no scope, any principal) and its role rule. */
function contractAccess(method: string, path: string): { scope: string | null; role: Role } {
  const p = path.replace(/^\/api\/v1/, '');
  const write = method !== 'GET';
  const id = '\\{[^}]+\\}';
  let scope: string | null;
  if (p === '/health' || p.startsWith('/saved-filters')) scope = null;
  else if (p.startsWith('/teams')) scope = write ? 'admin' : null; // "teams changes" need admin
  else if (/^\/(api-keys|settings|audit-logs|webhooks|notification-channels)(\/|$)/.test(p)) scope = 'admin';
  else if (new RegExp(`^/agents/${id}/keys`).test(p)) scope = 'admin'; // agent-scoped keys are API keys
  else if (p === '/agents/budgets' || (!write && new RegExp(`^/agents/${id}/(budget|stats)$`).test(p))) scope = 'analytics:read';
  else if (p === '/traces/stats' || /^\/(incidents|alerts|anomal|forecast)/.test(p)) scope = 'analytics:read';
  else if (p === '/policies/stats') scope = 'analytics:read'; // "analytics:read stats"

  else if (p.startsWith('/traces')) scope = write ? 'trace:write' : 'trace:read';
  else if (p === '/policies/enforce' || p === '/policies/test') return { scope: 'policy:read', role: 'viewer' };
  else if (p.startsWith('/policies') || p.startsWith('/access-grants')) scope = write ? 'policy:write' : 'policy:read';
  else if (/^\/(agents|prompt|orchestrations)/.test(p)) scope = write ? 'agent:write' : 'agent:read';
  else throw new Error(`contract.md gives no scope rule for ${method} ${path}: add it to this test`);
  return { scope, role: scope === 'admin' ? 'admin' : write ? 'developer' : 'viewer' };
}

/** Routes where agent-scoped keys are let in (docs/decisions.md: ingest, enforce, reading their own agent and its decisions). */
const AGENT_KEY_ROUTES = new Set([
  'POST /api/v1/traces/ingest',
  'POST /api/v1/policies/enforce',
  'GET /api/v1/agents/{id}',
  // An agent reads its own decisions (docs/decisions.md, "Decision log and policy stats").
  'GET /api/v1/policies/decisions',
  'GET /api/v1/policies/decisions/{decisionId}',
]);

let agentUuid: string;
let ops: { method: string; path: string }[];

beforeAll(async ({ app, org }) => {
  const agent = await org.req({
    method: 'POST', url: '/api/v1/agents',
    payload: { agentId: `matrix-${randomUUID()}`, name: 'M', type: 'chatbot', platform: 'custom', environment: 'production' },
  });
  agentUuid = agent.json().data.id;
  const doc = (await app.app.inject({ method: 'GET', url: '/api-docs.json' })).json() as { paths: Record<string, Record<string, unknown>> };
  ops = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item).filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m)).map((m) => ({ method: m.toUpperCase(), path })),
  );
});

/** Calls a route with a principal. Bodies are a bare JSON string, which no route accepts: allowed calls stop at validation. */
async function call(app: TestApp, op: { method: string; path: string }, headers: Record<string, string>) {
  const url = op.path.replace(/\{id\}/g, op.path.startsWith('/api/v1/agents/') ? agentUuid : randomUUID()).replace(/\{[^}]+\}/g, randomUUID());
  const hasBody = ['POST', 'PUT', 'PATCH'].includes(op.method);
  return app.app.inject({
    method: op.method as 'GET', url, headers: { ...headers, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
    ...(hasBody ? { payload: '"not-an-object"' } : {}),
  });
}

/** True when the authorization layer refused the call (the handler's own 403s/404s do not count). */
function refused(res: { statusCode: number; json(): { error?: { code?: string; message?: string } } }) {
  if (res.statusCode === 401) return true;
  if (res.statusCode !== 403) return false;
  return /^(Requires (role|scope)|Agent-scoped keys cannot|This route declares no access)/.test(res.json().error?.message ?? '');
}

describe('deny by default', () => {
  it('refuses to start when a route declares no access, naming it', async () => {
    const config = parseConfig({ LOG_LEVEL: 'silent' });
    const database = await openDatabase({ url: undefined, dataDir: null, poolSize: 1 });
    const app = await buildApp({ config, database, state: memoryState() });
    app.get('/api/v1/undeclared', async () => ({ ok: true }));
    await expect(app.ready()).rejects.toThrow(/GET \/api\/v1\/undeclared/);
    await app.close().catch(() => undefined);
    await database.close();
  });

  it('documents routes, and none answers without credentials', async ({ app }) => {
    expect(ops.length).toBeGreaterThan(30);
    for (const op of ops) expect({ op, status: (await call(app, op, {})).statusCode }).toEqual({ op, status: 401 });
    for (const url of ['/livez', '/readyz', '/api-docs.json']) expect((await app.app.inject({ method: 'GET', url })).statusCode).toBe(200);
  });
});

describe('role and scope matrix of contract.md', () => {
  it('viewer, developer and admin keys reach exactly the routes their role and scopes allow', async ({ app, org }) => {
    const keys: { name: string; role: Role; scopes: string[]; key: string }[] = [
      { name: 'viewer', role: 'viewer', scopes: SEVEN.filter((s) => s.endsWith(':read')), key: '' },
      { name: 'developer', role: 'developer', scopes: SEVEN, key: '' },
    ];
    for (const k of keys) k.key = (await createKey(org, { name: k.name, scopes: k.scopes })).key;
    keys.push({ name: 'admin', role: 'admin', scopes: [...SEVEN, 'admin'], key: org.key });
    const wrong: string[] = [];
    for (const op of ops) {
      const need = contractAccess(op.method, op.path);
      for (const k of keys) {
        const allowed = RANK[k.role] >= RANK[need.role] && (need.scope === null || k.scopes.includes(need.scope));
        const res = await call(app, op, { 'x-api-key': k.key });
        if (refused(res) === allowed) wrong.push(`${k.name} ${op.method} ${op.path}: ${res.statusCode} (expected ${allowed ? 'allowed' : 'refused'})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('a key missing the route scope is refused even with the role for it', async ({ app, org }) => {
    const wrong: string[] = [];
    const byScope = new Map<string, string>();
    for (const op of ops) {
      const need = contractAccess(op.method, op.path);
      if (need.scope === null || need.scope === 'admin') continue;
      // Every other scope, including a write scope: the role is developer, only the scope is missing.
      let key = byScope.get(need.scope);
      if (!key) {
        key = (await createKey(org, { name: `no-${need.scope}`, scopes: SEVEN.filter((s) => s !== need.scope) })).key;
        byScope.set(need.scope, key);
      }
      const res = await call(app, op, { 'x-api-key': key });
      if (!refused(res)) wrong.push(`${op.method} ${op.path}: ${res.statusCode}`);
    }
    expect(wrong).toEqual([]);
  });

  it('agent-scoped keys are refused except on the routes that let them in', async ({ app, org }) => {
    const created = await org.req({ method: 'POST', url: `/api/v1/agents/${agentUuid}/keys`, payload: { name: 'agent key' } });
    expect(created.statusCode).toBe(201);
    const key = created.json().data.key as string;
    const wrong: string[] = [];
    for (const op of ops) {
      const allowed = AGENT_KEY_ROUTES.has(`${op.method} ${op.path}`);
      const res = await call(app, op, { 'x-api-key': key });
      if (refused(res) === allowed) wrong.push(`${op.method} ${op.path}: ${res.statusCode} (expected ${allowed ? 'allowed' : 'refused'})`);
    }
    expect(wrong).toEqual([]);
  });
});
