/** Test harness: a real app on a real database (in-memory PGlite, or DATABASE_URL), real Redis when REDIS_URL is set. */
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { SignJWT } from 'jose';
import { buildApp, type AppDeps } from '../src/app.js';
import { parseConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { createOrganization } from '../src/domains/organizations/service.js';
import { memoryState, redisState, type SharedState } from '../src/lib/shared-state.js';

export const JWT_SECRET = 'test-secret-with-enough-length-for-hs256!!';
export const JWT_ISSUER = 'https://agov.test';
export const JWT_AUDIENCE = 'agov';

export interface TestApp {
  app: FastifyInstance;
  database: Database;
  state: SharedState;
  close(): Promise<void>;
}

/** Builds an app on a fresh PGlite (or the shared PostgreSQL of DATABASE_URL) with generous rate limits. */
export async function createTestApp(env: Record<string, string> = {}, opts: { logStream?: AppDeps['logStream'] } = {}): Promise<TestApp> {
  const config = parseConfig({
    LOG_LEVEL: 'silent',
    RATE_LIMIT_CONTROL_PER_MINUTE: '1000000',
    RATE_LIMIT_INGEST_PER_MINUTE: '1000000',
    ENFORCEMENT_RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_JWT_SECRET: JWT_SECRET,
    AUTH_JWT_ISSUER: JWT_ISSUER,
    AUTH_JWT_AUDIENCE: JWT_AUDIENCE,
    DATABASE_URL: process.env.DATABASE_URL ?? '',
    REDIS_URL: process.env.REDIS_URL ?? '',
    ...env,
  });
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: null, poolSize: 5 });
  await database.migrate();
  const state = config.REDIS_URL ? await redisState(config.REDIS_URL) : memoryState();
  const app = await buildApp({ config, database, state, logStream: opts.logStream });
  await app.ready();
  return {
    app,
    database,
    state,
    async close() {
      await app.close();
      await state.close();
      await database.close();
    },
  };
}

export interface TestOrg {
  orgId: string;
  key: string;
  /** inject() with this org's admin key. */
  req(opts: InjectOptions & { key?: string }): Promise<LightMyRequestResponse>;
}

/** Creates an organization with an admin key, as `agov init` does. */
export async function createOrg(t: TestApp, name = 'Acme'): Promise<TestOrg> {
  const { organization, key } = await createOrganization(t.database.db, { name: `${name} ${Math.random().toString(36).slice(2, 8)}` });
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
