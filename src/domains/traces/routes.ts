/** HTTP routes for /traces. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../../http/envelope.js';
import { principalOf } from '../../http/context.js';
import { ingestInput, ingestResultSchema } from './schemas.js';
import { ingestTraces } from './ingest.js';

const tags = ['Traces'];

export async function traceRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db, pricing, subscriptions, config } = app.deps;

  r.post('/traces/ingest', {
    bodyLimit: config.INGEST_BODY_LIMIT_BYTES,
    config: { auth: { scope: 'trace:write', agentKeys: true, rateLimit: 'ingest' } },
    schema: {
      tags,
      summary: 'Ingest 1-100 traces (upsert by traceId; partial success)',
      description:
        'Each item is validated on its own: valid items are stored, invalid ones are reported in `errors` with their index. ' +
        'A later item with the same traceId (in this batch or a later one) updates the trace; fields it omits keep their stored values.',
      body: ingestInput,
      response: { 202: ingestResultSchema, ...errorResponses },
    },
  }, async (req, reply) => {
    const result = await ingestTraces({ db, pricing, subscriptions }, principalOf(req), req.body.traces);
    return reply.code(202).send(result);
  });
}
