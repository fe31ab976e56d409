/**
 * The document as a user's typed client sees it (README, "API description"): openapi-typescript
 * generates types from the served document, tsc checks a small openapi-fetch program against them,
 * and the program then runs against the app listening on a random port.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from './fixture.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');

/** The user's program: register an agent, ingest a trace, list traces, handle a 404. */
const CLIENT = `
import createClient from 'openapi-fetch';
import type { paths } from './api.js';

const [baseUrl, key, suffix, missingId] = process.argv.slice(2);
const api = createClient<paths>({ baseUrl, headers: { 'X-API-Key': key } });

// @ts-expect-error: name, type, platform and environment are required (the types are real, not any).
void (() => api.POST('/api/v1/agents', { body: { agentId: 'incomplete' } }));

const registered = await api.POST('/api/v1/agents', {
  body: { agentId: 'typed-' + suffix, name: 'Typed client', type: 'chatbot', platform: 'custom', environment: 'production' },
});
if (!registered.data) throw new Error('register failed: ' + JSON.stringify(registered.error));
const agent = registered.data.data;
const status: 'active' | 'paused' | 'archived' = agent.status;

const ingested = await api.POST('/api/v1/traces/ingest', {
  body: { traces: [{ traceId: 'trace-' + suffix, agentId: agent.agentId, status: 'success', durationMs: 12 }] },
});
if (!ingested.data) throw new Error('ingest failed: ' + JSON.stringify(ingested.error));

const listed = await api.GET('/api/v1/traces', { params: { query: { agentId: agent.id, limit: 10 } } });
if (!listed.data) throw new Error('list failed: ' + JSON.stringify(listed.error));
const traceIds: string[] = listed.data.data.map((t) => t.traceId);

const missing = await api.GET('/api/v1/agents/{id}', { params: { path: { id: missingId } } });
const notFound = missing.error ? { status: missing.response.status, code: missing.error.error.code } : null;

console.log(JSON.stringify({ agentId: agent.agentId, status, accepted: ingested.data.accepted, traceIds, total: listed.data.meta.total, notFound }));
`;

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agov-typed-client-'));
  // The program resolves openapi-fetch, tsx and typescript from the repository's dependencies.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('typed client', () => {
  it('types generated from the document check a register/ingest/list/404 program, which then runs against the app', async ({ app, org }) => {
    const doc = (await app.app.inject({ method: 'GET', url: '/api-docs.json' })).json();
    // Request fields with a default are optional: openapi-typescript's default would make them required
    // (README, "API description": --default-non-nullable false).
    writeFileSync(join(dir, 'api.d.ts'), astToString(await openapiTS(doc, { defaultNonNullable: false })));
    writeFileSync(join(dir, 'client.ts'), CLIENT);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', noEmit: true, skipLibCheck: true, types: ['node'] },
        files: ['client.ts'],
      }),
    );
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));

    const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir]).catch((e: { stdout: string }) => e);
    expect(tsc.stdout).toBe('');

    const address = await app.app.listen({ port: 0, host: '127.0.0.1' });
    const suffix = Math.random().toString(36).slice(2, 10);
    const missingId = '00000000-0000-4000-8000-000000000000';
    const { stdout } = await run(process.execPath, ['--import', 'tsx', join(dir, 'client.ts'), address, org.key, suffix, missingId], { cwd: dir });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual({
      agentId: `typed-${suffix}`,
      status: 'active',
      accepted: 1,
      traceIds: [`trace-${suffix}`],
      total: 1,
      notFound: { status: 404, code: 'NOT_FOUND' },
    });
  }, 60_000);
});
