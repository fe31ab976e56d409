/** HTTP routes for /audit-logs (admin). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { dataSchema, errorResponses, one, page, pageSchema } from '../../http/envelope.js';
import { principalOf } from '../../http/context.js';
import { sendExport } from '../../http/export.js';
import { idParams } from '../../http/validation.js';
import { AUDIT_COLUMNS, auditBatches, getAudit, listAudit } from './queries.js';
import { listCheckpoints } from './checkpoints.js';
import { auditCheckpointSchema, auditEntrySchema, exportAuditQuery, listAuditQuery, listCheckpointsQuery, verifySchema } from './schemas.js';

const tags = ['Audit log'];
const auth = { scope: 'admin' as const };

export async function auditRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db, services } = app.deps;

  r.get('/audit-logs', {
    config: { auth },
    schema: { tags, summary: 'List audit log entries, newest first', querystring: listAuditQuery, response: { 200: pageSchema(auditEntrySchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await listAudit(db, principalOf(req).organizationId, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.get('/audit-logs/verify', {
    config: { auth },
    schema: {
      tags,
      summary: 'Verify the hash chain and the latest signed checkpoints; names the first edited, removed or reordered entry, or the first after the last good checkpoint',
      response: { 200: dataSchema(verifySchema), ...errorResponses },
    },
  }, async (req) => one(await services.audit.verify(principalOf(req).organizationId)));

  r.get('/audit-logs/checkpoints', {
    config: { auth },
    schema: {
      tags,
      summary: 'List signed checkpoints of the chain head, newest first, with the public key to verify them offline',
      querystring: listCheckpointsQuery,
      response: { 200: pageSchema(auditCheckpointSchema), ...errorResponses },
    },
  }, async (req) => {
    const { rows, total } = await listCheckpoints(db, principalOf(req).organizationId, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.get('/audit-logs/export', {
    config: { auth },
    schema: {
      tags,
      summary: 'Export matching entries as streamed JSON ({ data: [...] }) or CSV',
      querystring: exportAuditQuery,
      produces: ['application/json', 'text/csv'],
    },
  }, async (req, reply) => {
    const { format, ...filters } = req.query;
    return sendExport(reply, format, 'audit-log', AUDIT_COLUMNS, auditBatches(db, principalOf(req).organizationId, filters));
  });

  r.get('/audit-logs/:id', {
    config: { auth },
    schema: { tags, summary: 'Get one audit log entry', params: idParams, response: { 200: dataSchema(auditEntrySchema), ...errorResponses } },
  }, async (req) => one(await getAudit(db, principalOf(req).organizationId, req.params.id)));
}
