/** HTTP routes for /traces. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dataSchema, errorResponses, exportResponse, one, page } from '../../http/envelope.js';
import type { RouteExample } from '../../http/openapi.js';
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
import { ingestTraces, type AccrualChange } from './ingest.js';
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
  // After commit, before the answer: the spend counter takes the agents' new spend, and the agent
  // cache forgets the agents a budget paused or marked (docs/decisions.md, "Spend counter").
  const { afterCommit, services } = app.deps;
  const committed = async (orgId: string, change: AccrualChange) => {
    await Promise.all([
      afterCommit.run('agents: spend counter (ingest)', () => services.agents.accrued(orgId, change.spends)),
      change.changed.length ? afterCommit.run('agents: agent cache (ingest)', () => services.agents.invalidate(orgId, change.changed)) : undefined,
    ]);
  };

  r.post('/traces/ingest', {
    bodyLimit: config.INGEST_BODY_LIMIT_BYTES,
    config: { auth: { scope: 'trace:write', agentKeys: true, rateLimit: 'ingest' } },
    schema: {
      tags,
      operationId: 'traces.ingest', summary: 'Ingest 1-100 traces (upsert by traceId; partial success)',
      description:
        'Each item is validated on its own: valid items are stored, invalid ones are reported in `errors` with their index. ' +
        'A later item with the same traceId (in this batch or a later one) updates the trace; fields it omits keep their stored values.',
      body: ingestInput,
      response: { 202: ingestResultSchema, ...errorResponses },
      'x-example': {
        request: { traces: [
          { traceId: 'run-2026-01-15-0001', agentId: 'support-bot-eu', status: 'success', durationMs: 1840, modelName: 'gpt-4o-mini', promptTokens: 412, completionTokens: 96, input: { question: 'Where is my order?' }, output: { answer: 'It ships tomorrow.' } },
          { traceId: 'run-2026-01-15-0002', agentId: 'no-such-agent' },
        ] },
        response: { accepted: 1, failed: 1, traceIds: ['run-2026-01-15-0001'], errors: [{ index: 1, traceId: 'run-2026-01-15-0002', error: 'unknown agent' }] },
      } satisfies RouteExample,
      // Published in the API description: this route takes larger bodies than the others.
      'x-body-limit': config.INGEST_BODY_LIMIT_BYTES,
    },
  }, async (req, reply) => {
    const length = Number(req.headers['content-length']);
    const result = await ingestTraces({ db, pricing, subscriptions, clock, committed }, principalOf(req), req.body.traces, Number.isFinite(length) ? length : undefined);
    return reply.code(202).send(result);
  });

  r.get('/traces', {
    config: { auth: read },
    schema: {
      tags,
      operationId: 'traces.list', summary: 'List traces, newest first',
      description:
        '`search` is full-text: words, "quoted phrases", OR and -exclusions. ' +
        'meta.total is exact up to TRACE_COUNT_EXACT_LIMIT (10,000) matches; beyond that it is PostgreSQL\'s estimate and meta.totalEstimated is true.',
      querystring: listTracesQuery,
      response: {
        200: z.object({
          data: z.array(traceSchema),
          meta: z.object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int(), totalEstimated: z.boolean().optional() }),
        }),
        ...errorResponses,
      },
      'x-example': { response: { data: [{ id: '3d2c1b0a-9f8e-4d7c-8b6a-5f4e3d2c1b0a', traceId: 'run-2026-01-15-0001', agentId: '0b5a7f0e-4a8e-4c61-9d0e-6f1f8d2b9c11', parentTraceId: null, timestamp: '2026-01-15T09:31:02.120Z', durationMs: 1840, status: 'success', input: { question: 'Where is my order?' }, output: { answer: 'It ships tomorrow.' }, errorMessage: null, errorType: null, modelName: 'gpt-4o-mini', promptTokens: 412, completionTokens: 96, totalTokens: 508, costUsd: 0.00012, environment: 'production', version: '1.4.0', tags: ['support'], metadata: {}, userId: 'customer-118', sessionId: 'sess-77', spanType: 'root', spanName: 'answer', flagged: false, flagReason: null, createdAt: '2026-01-15T09:31:03.005Z' }], meta: { total: 1, limit: 50, offset: 0 } } } satisfies RouteExample,
    },
  }, async (req) => {
    const { rows, total, estimated } = await q.listTraces(db, principalOf(req), req.query, config.TRACE_COUNT_EXACT_LIMIT);
    const out = page(rows, total, req.query.limit, req.query.offset);
    return estimated ? { ...out, meta: { ...out.meta, totalEstimated: true } } : out;
  });

  r.get('/traces/stats', {
    config: { auth: { scope: 'analytics:read' } },
    schema: { tags, operationId: 'traces.getStats', summary: 'Aggregate statistics over the last `hours`', description: 'Totals, error rate, duration percentiles, cost and tokens, by status, agent and model, and a time series, over the `hours` ending now.', querystring: statsQuery, response: { 200: dataSchema(traceStatsSchema), ...errorResponses } },
  }, async (req) => one(await q.traceStats(db, principalOf(req), req.query.hours, clock.now())));

  r.get('/traces/export', {
    config: { auth: read },
    schema: {
      tags,
      operationId: 'traces.export', summary: 'Export matching traces as JSON or CSV', description: 'Streams every matching trace (no page limit), newest first: JSON `{ data: [Trace] }` or CSV with a header row of Trace fields (objects as JSON text). `startDate`/`endDate` take a date (the end date includes that whole day) or a date-time. CSV cells that would run as spreadsheet formulas are prefixed with a quote.',
      querystring: exportQuery,
      response: { ...exportResponse(traceSchema), ...errorResponses },
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
      operationId: 'traces.listSimilar', summary: 'Traces similar to one (shared agent, model, status, environment, span type)', description: 'Scored by what they share with the reference trace (agent weighs most, then model, status, environment, span type), best first, with the score in `similarityScore`.',
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
    schema: { tags, operationId: 'traces.get', summary: 'Get a trace with relatedTraces (same parent or session)', description: '`relatedTraces` are the traces with the same parent or the same session.', params: idParams, response: { 200: dataSchema(traceWithRelatedSchema), ...errorResponses } },
  }, async (req) => one(await q.getTraceWithRelated(db, principalOf(req), req.params.id)));

  r.get('/traces/:id/tree', {
    config: { auth: read },
    schema: {
      tags,
      operationId: 'traces.getTree', summary: 'The span hierarchy below a trace (recursive by parentTraceId)', description: 'Follows parentTraceId downwards from the trace.',
      params: idParams,
      response: { 200: dataSchema(z.object({ root: traceSchema, children: z.array(traceTreeNodeSchema) })), ...errorResponses },
    },
  }, async (req) => one(await q.treeOf(db, principalOf(req), req.params.id)));

  r.get('/traces/:id/children', {
    config: { auth: read },
    schema: { tags, operationId: 'traces.listChildren', summary: 'Direct children of a trace', description: "Traces whose parentTraceId is this trace's traceId.", params: idParams, response: { 200: dataSchema(z.array(traceSchema)), ...errorResponses } },
  }, async (req) => one(await q.childrenOf(db, principalOf(req), req.params.id)));

  r.patch('/traces/:id/flag', {
    config: { auth: { scope: 'trace:write' } },
    schema: {
      tags,
      operationId: 'traces.flag', summary: 'Flag or unflag a trace for human review', description: 'The body is optional: no body flags the trace; `{ "flagged": false }` clears the flag. Audited (`trace.flag` / `trace.unflag`).',
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
