/** HTTP routes for /traces. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dataSchema, errorResponses, one, page } from '../../http/envelope.js';
import { auditContext, principalOf } from '../../http/context.js';
import { sendExport } from '../../http/export.js';
import { idParams } from '../../http/validation.js';
import {
  exportQuery,
  flagInput,
  ingestInput,
  ingestResultSchema,
  listTracesQuery,
  similarQuery,
  similarTraceSchema,
  statsQuery,
  traceSchema,
  traceStatsSchema,
  traceTreeNodeSchema,
  traceWithRelatedSchema,
} from './schemas.js';
import { ingestTraces } from './ingest.js';
import * as q from './queries.js';
import { setFlag } from './service.js';

const read = { scope: 'trace:read' as const };

/** Start of a date (or the instant of a date-time); end dates given as a date include that whole day. */
const startOf = (s: string) => new Date(s.length === 10 ? `${s}T00:00:00Z` : s);
const endOf = (s: string) => (s.length === 10 ? new Date(Date.parse(`${s}T00:00:00Z`) + 86_400_000 - 1) : new Date(s));

const tags = ['Traces'];

export async function traceRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db, pricing, subscriptions, config, clock } = app.deps;

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
      // Published in the API description: this route takes larger bodies than the others.
      'x-body-limit': config.INGEST_BODY_LIMIT_BYTES,
    },
  }, async (req, reply) => {
    const length = Number(req.headers['content-length']);
    const result = await ingestTraces({ db, pricing, subscriptions, clock }, principalOf(req), req.body.traces, Number.isFinite(length) ? length : undefined);
    return reply.code(202).send(result);
  });

  r.get('/traces', {
    config: { auth: read },
    schema: {
      tags,
      summary: 'List traces, newest first; `search` is full-text (words, "phrases", OR, -exclusions)',
      description:
        'meta.total is exact up to TRACE_COUNT_EXACT_LIMIT (10,000) matches; beyond that it is PostgreSQL\'s estimate and meta.totalEstimated is true.',
      querystring: listTracesQuery,
      response: {
        200: z.object({
          data: z.array(traceSchema),
          meta: z.object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int(), totalEstimated: z.boolean().optional() }),
        }),
        ...errorResponses,
      },
    },
  }, async (req) => {
    const { rows, total, estimated } = await q.listTraces(db, principalOf(req), req.query, config.TRACE_COUNT_EXACT_LIMIT);
    const out = page(rows, total, req.query.limit, req.query.offset);
    return estimated ? { ...out, meta: { ...out.meta, totalEstimated: true } } : out;
  });

  r.get('/traces/stats', {
    config: { auth: { scope: 'analytics:read' } },
    schema: { tags, summary: 'Aggregate statistics over the last `hours`', querystring: statsQuery, response: { 200: dataSchema(traceStatsSchema), ...errorResponses } },
  }, async (req) => one(await q.traceStats(db, principalOf(req), req.query.hours, clock.now())));

  r.get('/traces/export', {
    config: { auth: read },
    schema: {
      tags,
      summary: 'Export matching traces as streamed JSON ({ data: [Trace] }) or CSV (header row of Trace fields; objects as JSON text)',
      querystring: exportQuery,
      produces: ['application/json', 'text/csv'],
    },
  }, async (req, reply) => {
    const { format, startDate, endDate, ...f } = req.query;
    const filter = { ...f, startTime: startDate ? startOf(startDate) : undefined, endTime: endDate ? endOf(endDate) : undefined };
    return sendExport(reply, format, 'traces', q.TRACE_COLUMNS, q.traceBatches(db, principalOf(req), filter));
  });

  r.get('/traces/similar/:id', {
    config: { auth: read },
    schema: {
      tags,
      summary: 'Traces similar to one (shared agent, model, status, environment, span type)',
      params: idParams,
      querystring: similarQuery,
      response: { 200: z.object({ data: z.array(similarTraceSchema), meta: z.object({ referenceTraceId: z.uuid(), total: z.number().int() }) }), ...errorResponses },
    },
  }, async (req) => {
    const rows = await q.similarTo(db, principalOf(req), req.params.id, req.query.limit);
    return { data: rows, meta: { referenceTraceId: req.params.id, total: rows.length } };
  });

  r.get('/traces/:id', {
    config: { auth: read },
    schema: { tags, summary: 'Get a trace with relatedTraces (same parent or session)', params: idParams, response: { 200: dataSchema(traceWithRelatedSchema), ...errorResponses } },
  }, async (req) => one(await q.getTraceWithRelated(db, principalOf(req), req.params.id)));

  r.get('/traces/:id/tree', {
    config: { auth: read },
    schema: {
      tags,
      summary: 'The span hierarchy below a trace (recursive by parentTraceId)',
      params: idParams,
      response: { 200: dataSchema(z.object({ root: traceSchema, children: z.array(traceTreeNodeSchema) })), ...errorResponses },
    },
  }, async (req) => one(await q.treeOf(db, principalOf(req), req.params.id)));

  r.get('/traces/:id/children', {
    config: { auth: read },
    schema: { tags, summary: 'Direct children of a trace', params: idParams, response: { 200: dataSchema(z.array(traceSchema)), ...errorResponses } },
  }, async (req) => one(await q.childrenOf(db, principalOf(req), req.params.id)));

  r.patch('/traces/:id/flag', {
    config: { auth: { scope: 'trace:write' } },
    schema: {
      tags,
      summary: 'Flag or unflag a trace for human review',
      params: idParams,
      body: flagInput.optional(),
      response: { 200: z.object({ message: z.string(), data: z.object({ id: z.uuid() }) }), ...errorResponses },
    },
  }, async (req) => {
    const flagged = req.body?.flagged ?? true;
    const data = await setFlag(db, { ...auditContext(req), principal: principalOf(req) }, req.params.id, flagged, req.body?.reason ?? null);
    return { message: flagged ? 'Trace flagged for review' : 'Trace unflagged', data };
  });
}
