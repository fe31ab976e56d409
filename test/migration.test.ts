/**
 * Upgrading a database that holds rows: migrate a PGlite data directory to 0000/0001 only, write
 * rows of every kind the way that schema allowed (v4 ids, double precision money, team_members
 * without organization_id), then open it as the app does, which applies the rest, and read and
 * change everything through the API.
 */
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { parseConfig } from '../src/config.js';
import { openDatabase, type Database, type Db } from '../src/db/client.js';
import * as schema from '../src/db/schema/index.js';
import { generateKey, hashKey, prefixOf } from '../src/domains/api-keys/key-material.js';
import { createOrganization } from '../src/domains/organizations/service.js';
import { memoryState } from '../src/lib/shared-state.js';
import { JWT_AUDIENCE, JWT_ISSUER, JWT_SECRET, signJwt } from './helpers.js';

const migrations = fileURLToPath(new URL('../src/db/migrations', import.meta.url));
const dirs: string[] = [];
const tmp = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};

/** A copy of the migrations folder whose journal stops after the first `n` migrations. */
function firstMigrations(n: number) {
  const dir = tmp('agov-migrations-');
  cpSync(migrations, dir, { recursive: true });
  const journalPath = join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8'));
  journal.entries = journal.entries.slice(0, n);
  writeFileSync(journalPath, JSON.stringify(journal));
  return dir;
}

const ids = { agent: randomUUID(), trace: randomUUID(), user: randomUUID(), team: randomUUID(), filter: randomUUID() };
const agentKey = generateKey('staging');
let orgId = '';
let adminKey = '';
let database: Database;
let app: FastifyInstance;
const req = (opts: InjectOptions, key = adminKey) => app.inject({ ...opts, headers: { 'x-api-key': key, ...(opts.headers ?? {}) } } as InjectOptions);

beforeAll(async () => {
  const dataDir = tmp('agov-upgrade-');
  // The old schema, with rows.
  const old = new PGlite(dataDir);
  const db = drizzle(old, { schema }) as unknown as Db;
  await migrate(db as never, { migrationsFolder: firstMigrations(2) });
  // Today's createOrganization also writes api_key_hashes (migration 0004): a stand-in table takes
  // that row and is dropped again, so the admin key reaches the upgrade only as an api_keys row,
  // as on a real 0001 database, and authenticates afterwards through 0004's backfill.
  await old.exec('create table api_key_hashes (key_hash text primary key, organization_id uuid not null, api_key_id uuid not null)');
  const created = await createOrganization(db, { name: 'Before the upgrade' });
  await old.exec('drop table api_key_hashes');
  orgId = created.organization.id;
  adminKey = created.key;
  const adminKeyId = created.apiKey.id;
  await old.exec(`
    insert into agents (id, organization_id, agent_id, name, type, platform, environment, monthly_budget_usd, current_month_cost_usd, spend_month)
      values ('${ids.agent}', '${orgId}', 'legacy-bot', 'Legacy', 'chatbot', 'custom', 'staging', 10, 0.30000000000000004, to_char(now() at time zone 'utc', 'YYYY-MM'));
    insert into traces (id, organization_id, trace_id, agent_id, "timestamp", status, environment, cost_usd, input, span_name)
      values ('${ids.trace}', '${orgId}', 'legacy-trace', '${ids.agent}', now() - interval '1 hour', 'success', 'staging', 0.1, '{"prompt": "legacyword here"}', 'old span');
    insert into api_keys (organization_id, agent_id, name, key_prefix, key_hash, environment, scopes, created_by)
      values ('${orgId}', '${ids.agent}', 'agent key', '${prefixOf(agentKey)}', '${hashKey(agentKey)}', 'staging', '{trace:write,policy:read,agent:read}', 'test');
    insert into users (id, organization_id, subject, email, name, role) values ('${ids.user}', '${orgId}', '${ids.user}', 'old@example.com', 'Old', 'admin');
    insert into teams (id, organization_id, name) values ('${ids.team}', '${orgId}', 'Legacy team');
    insert into team_members (team_id, user_id, role) values ('${ids.team}', '${ids.user}', 'lead');
    insert into saved_filters (id, organization_id, user_id, name, resource_type, filter_config)
      values ('${ids.filter}', '${orgId}', '${adminKeyId}', 'mine', 'traces', '{"status": "error"}');
    insert into outbox_events (id, organization_id, type, data, body, idempotency_key)
      values ('${randomUUID()}', '${orgId}', 'agent_registered', '{}', '{}', 'k');
  `);
  await old.close();

  // The app opens it: the remaining migrations run on the rows above.
  database = await openDatabase({ dataDir });
  await database.migrate();
  const config = parseConfig({ LOG_LEVEL: 'silent', AUTH_JWT_SECRET: JWT_SECRET, AUTH_JWT_ISSUER: JWT_ISSUER, AUTH_JWT_AUDIENCE: JWT_AUDIENCE, DATABASE_URL: '', REDIS_URL: '' });
  app = await buildApp({ config, database, state: memoryState() });
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await database?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('migrating a database that holds rows (0000/0001 → current)', () => {
  it('keeps agents, traces and money (rounded to 10 decimals once), and search finds old traces', async () => {
    const agent = (await req({ method: 'GET', url: `/api/v1/agents/${ids.agent}` })).json().data;
    expect(agent).toMatchObject({ agentId: 'legacy-bot', monthlyBudgetUsd: 10, currentMonthCostUsd: 0.3 });
    const trace = (await req({ method: 'GET', url: `/api/v1/traces/${ids.trace}` })).json().data;
    expect(trace).toMatchObject({ traceId: 'legacy-trace', agentId: ids.agent, costUsd: 0.1 });
    const found = (await req({ method: 'GET', url: '/api/v1/traces?search=legacyword' })).json().data;
    expect(found.map((x: { id: string }) => x.id)).toEqual([ids.trace]);
  });

  it('keeps keys working: the admin key, and the agent key ingests for its agent with exact spend', async () => {
    const keys = (await req({ method: 'GET', url: `/api/v1/agents/${ids.agent}/keys` })).json().data;
    expect(keys).toHaveLength(1);
    const res = await req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces: [{ traceId: 'after-upgrade', costUsd: 0.2 }] } }, agentKey);
    expect(res.json()).toMatchObject({ accepted: 1, failed: 0 });
    const agent = (await req({ method: 'GET', url: `/api/v1/agents/${ids.agent}` })).json().data;
    expect(agent.currentMonthCostUsd).toBe(0.5);
  });

  it('keeps teams and memberships (organization filled from the team), users, saved filters and the audit chain', async () => {
    const team = (await req({ method: 'GET', url: `/api/v1/teams/${ids.team}` })).json().data;
    expect(team).toMatchObject({ name: 'Legacy team', memberCount: 1, members: [{ id: ids.user, email: 'old@example.com', role: 'lead' }] });
    const again = await req({ method: 'POST', url: `/api/v1/teams/${ids.team}/members`, payload: { userId: ids.user } });
    expect(again.statusCode).toBe(409);
    const token = await signJwt({ sub: ids.user, org_id: orgId, role: 'admin' });
    const jwt = await app.inject({ method: 'GET', url: '/api/v1/teams', headers: { authorization: `Bearer ${token}` } });
    expect(jwt.statusCode).toBe(200);
    const filter = (await req({ method: 'GET', url: `/api/v1/saved-filters/${ids.filter}` })).json().data;
    expect(filter).toMatchObject({ name: 'mine', filterConfig: { status: 'error' } });
    const verify = (await req({ method: 'GET', url: '/api/v1/audit-logs/verify' })).json().data;
    expect(verify).toMatchObject({ valid: true });
  });
});
