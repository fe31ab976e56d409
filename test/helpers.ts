/**
 * Test harness: a real app on a real database (a copy of the migrated template: in-memory PGlite,
 * or DATABASE_URL), real Redis when REDIS_URL is set, built by the same container as the server,
 * on a test clock.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { inject } from 'vitest';
import { SignJWT } from 'jose';
import { buildApp, type AppDeps } from '../src/app.js';
import { parseConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { assemble, type Container } from '../src/container.js';
import { TestClock } from '../src/core/clock.js';
import { memoryState, redisState, type SharedState } from '../src/lib/shared-state.js';
import { onServer, withDatabase } from './global-setup.js';

export const JWT_SECRET = 'test-secret-with-enough-length-for-hs256!!';
export const JWT_ISSUER = 'https://agov.test';
export const JWT_AUDIENCE = 'agov';

export interface TestApp {
  app: FastifyInstance;
  database: Database;
  state: SharedState;
  /** The app's clock: stands at the time the app was built until a test sets or advances it. */
  clock: TestClock;
  container: Container;
  close(): Promise<void>;
}

/**
 * Builds an app on a copy of the migrated template (a fresh PGlite, or this file's PostgreSQL
 * database) with generous rate limits. `opts.state` replaces the configured shared state (e.g. one
 * whose publishes fail); `opts.logStream` receives the app's logs.
 */
export async function createTestApp(
  env: Record<string, string> = {},
  opts: { state?: SharedState; logStream?: AppDeps['logStream'] } = {},
): Promise<TestApp> {
  const config = parseConfig({
    LOG_LEVEL: 'silent',
    RATE_LIMIT_CONTROL_PER_MINUTE: '1000000',
    RATE_LIMIT_INGEST_PER_MINUTE: '1000000',
    ENFORCEMENT_RATE_LIMIT_PER_MINUTE: '1000000',
    // Test files share 127.0.0.1 (and, with REDIS_URL, one Redis): test/auth-failure-limit.test.ts sets its own.
    RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: '1000000',
    AUTH_JWT_SECRET: JWT_SECRET,
    AUTH_JWT_ISSUER: JWT_ISSUER,
    AUTH_JWT_AUDIENCE: JWT_AUDIENCE,
    DATABASE_URL: process.env.DATABASE_URL ? await testDatabaseUrl() : '',
    REDIS_URL: process.env.REDIS_URL ?? '',
    ...env,
  });
  const clock = new TestClock();
  const database = await openTestDatabase();
  const state = opts.state ?? (config.REDIS_URL ? await redisState(config.REDIS_URL) : memoryState());
  const container = assemble({ config, database, state, clock });
  const app = await buildApp({ ...container, logStream: opts.logStream });
  await app.ready();
  return {
    app,
    database: container.database,
    state: container.state,
    clock,
    container,
    async close() {
      await app.close();
      await container.close();
    },
  };
}

/**
 * Runs `fn` on an app of its own with an organization in it, and closes the app afterwards: for one
 * test that needs other settings than its file's app (test/fixture.ts), e.g. a low rate limit.
 */
export async function withTestApp<T>(
  env: Record<string, string>,
  fn: (t: TestApp, org: TestOrg) => Promise<T>,
  opts: Parameters<typeof createTestApp>[1] = {},
): Promise<T> {
  const t = await createTestApp(env, opts);
  try {
    return await fn(t, await createOrg(t));
  } finally {
    await t.close();
  }
}

let fileDatabaseUrl: Promise<string> | undefined;

/**
 * The PostgreSQL database of this test file: a copy of the migrated template (test/global-setup.ts),
 * made on first use. Every app of one file shares it (multi-instance tests need that); files never do.
 */
export function testDatabaseUrl(): Promise<string> {
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error('testDatabaseUrl() needs DATABASE_URL');
  fileDatabaseUrl ??= (async () => {
    const template = inject('pgTemplateDatabase');
    const name = `${template}_${randomBytes(6).toString('hex')}`;
    // Copies made at the same moment can find the template busy: try again briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await onServer(base, `create database "${name}" template "${template}"`);
        break;
      } catch (err) {
        if (attempt >= 20) throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
    return withDatabase(base, name);
  })();
  return fileDatabaseUrl;
}

let pgliteTemplate: Blob | undefined;

/** A migrated database for a test: a fresh PGlite loaded from the template, or this file's PostgreSQL copy. */
export async function openTestDatabase(): Promise<Database> {
  if (process.env.DATABASE_URL) return openDatabase({ url: await testDatabaseUrl(), poolSize: 5 });
  pgliteTemplate ??= new Blob([readFileSync(inject('pgliteTemplatePath'))]);
  return openDatabase({ dataDir: null, template: pgliteTemplate });
}

export interface TestOrg {
  orgId: string;
  key: string;
  /** inject() with this org's admin key. */
  req(opts: InjectOptions & { key?: string }): Promise<LightMyRequestResponse>;
}

/** Creates an organization with an admin key, as `agov init` does. */
export async function createOrg(t: TestApp, name = 'Acme'): Promise<TestOrg> {
  const { organization, key } = await t.container.services.organizations.create({ name: `${name} ${Math.random().toString(36).slice(2, 8)}` });
  return {
    orgId: organization.id,
    key,
    req: ({ key: k, headers, ...opts }) =>
      t.app.inject({ ...opts, headers: { 'x-api-key': k ?? key, ...(headers ?? {}) } } as InjectOptions),
  };
}

/** Signs a dashboard JWT for a user of an organization. */
export async function signJwt(claims: { sub: string; org_id: string; role: string; email?: string; name?: string }, secret = JWT_SECRET) {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(JWT_ISSUER)
    .setAudience(JWT_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(secret));
}

/** Creates an API key through the API and answers its secret. */
export async function createKey(org: TestOrg, body: Record<string, unknown>) {
  const res = await org.req({ method: 'POST', url: '/api/v1/api-keys', payload: { name: 'k', environment: 'production', ...body } });
  if (res.statusCode !== 201) throw new Error(`key creation failed: ${res.statusCode} ${res.body}`);
  return res.json().data as { id: string; key: string; scopes: string[] };
}
