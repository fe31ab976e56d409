/**
 * Child process of `npm run bench:enforce`: the real application (as the server runs it, jobs
 * included) plus one bare route beside it, `POST /api/v1/bench/bare`, with enforce's own auth
 * config (scope policy:read, the enforce rate-limit class) and body schema, answering a constant:
 * the same authentication, rate limiting, body parsing and validation, no policy work. Reports `{ port, key, orgId }`
 * over IPC; answers 'cpu' with its CPU time.
 */
import { enforceRequestSchema } from '../src/domains/policies/enforce-schemas.js';
import { startBenchApp } from './start-app.js';

const send = (m: unknown) => process.send!(m);
const CONSTANT = { data: { decision: 'allow', allowed: true, violations: [], warnings: [], evaluatedPolicies: 0, decisionId: '00000000-0000-4000-8000-000000000000', evaluationMs: 0 } };

const b = await startBenchApp({
  dataDir: null,
  env: { LOG_LEVEL: 'silent', RATE_LIMIT_CONTROL_PER_MINUTE: '100000000', ENFORCEMENT_RATE_LIMIT_PER_MINUTE: '100000000' },
});
// The same body schema as enforce (strict inputs refuse a body where none is declared), no response schema.
b.app.post('/api/v1/bench/bare', { config: { auth: { scope: 'policy:read', role: 'viewer', agentKeys: true, rateLimit: 'enforce' } }, schema: { body: enforceRequestSchema } }, async () => CONSTANT);
await b.app.listen({ port: 0, host: '127.0.0.1' });
process.on('message', (m: { cmd: string }) => {
  if (m.cmd === 'cpu') send({ cpu: process.cpuUsage() });
});
process.on('SIGINT', () => void b.close().finally(() => process.exit(0)));
process.on('SIGTERM', () => void b.close().finally(() => process.exit(0)));
send({ port: (b.app.server.address() as { port: number }).port, key: b.key, orgId: b.organizationId, db: b.database.kind });
