/** Probes (/livez, /readyz: public, no details) and the authenticated HealthResponse. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses, isoDateTimeOut } from '../../http/envelope.js';

const SERVICE = 'agent-governance-control-plane';
const VERSION = '1.0.0';
const PROBE_TIMEOUT_MS = 2000;

/** Resolves true when `check` succeeds within the timeout. */
async function within(check: () => Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const ok = await Promise.race([
      check().then((v) => v !== false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS))),
    ]);
    return ok;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

const healthSchema = z
  .object({
    status: z.enum(['healthy', 'degraded', 'unhealthy']),
    timestamp: isoDateTimeOut(),
    service: z.string(),
    version: z.string(),
    database: z.enum(['connected', 'disconnected']),
    redis: z.enum(['connected', 'disconnected']),
    cache: z.enum(['redis', 'memory']).describe('Where shared counters live; "memory" is the single-instance fallback'),
  })
  .meta({ id: 'HealthResponse' });

export async function probeRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const pub = { auth: { public: true } };
  r.get('/livez', { config: pub, schema: { hide: true } }, async () => ({ status: 'ok' }));
  r.get('/readyz', { config: pub, schema: { hide: true } }, async (_req, reply) => {
    const ok = await within(() => app.deps.database.ping());
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'not ready' });
  });
}

export async function healthRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/health', {
    config: { auth: { anyPrincipal: true, rateLimit: false } },
    schema: {
      tags: ['Health'],
      operationId: 'health.get', summary: 'Service health: database and cache checked for real', description: 'Checks the database and the shared cache for real (each with a 2 s timeout). 200 when healthy or degraded (one of the two unreachable), 503 when both are down. The unauthenticated probes /livez and /readyz are not part of this API.',
      response: { 200: healthSchema, 503: healthSchema, ...errorResponses },
    },
  }, async (_req, reply) => {
    const [db, cache] = await Promise.all([within(() => app.deps.database.ping()), within(() => app.deps.state.ping())]);
    // The spec: degraded when one of database or cache is unreachable, unhealthy when both are.
    const status = db && cache ? 'healthy' : db || cache ? 'degraded' : 'unhealthy';
    return reply.code(status === 'unhealthy' ? 503 : 200).send({
      status,
      timestamp: new Date().toISOString(),
      service: SERVICE,
      version: VERSION,
      database: db ? 'connected' : 'disconnected',
      redis: cache ? 'connected' : 'disconnected',
      cache: app.deps.state.kind,
    });
  });
}
