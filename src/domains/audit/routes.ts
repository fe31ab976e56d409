/** HTTP routes for /audit-logs (admin). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { dataSchema, errorResponses, exportResponse, one, page, pageSchema } from '../../http/envelope.js';
import { principalOf } from '../../http/context.js';
import { sendExport } from '../../http/export.js';
import { idParams } from '../../http/validation.js';
import { AUDIT_COLUMNS, auditBatches, getAudit, listAudit } from './queries.js';
import { listCheckpoints } from './checkpoints.js';
import { auditCheckpointSchema, auditEntrySchema, exportAuditQuery, listAuditQuery, listCheckpointsQuery, verifySchema } from './schemas.js';
import { verifyChain } from './service.js';

const tags = ['Audit log'];
const auth = { scope: 'admin' as const };

export async function auditRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db, audit } = app.deps;

  r.get('/audit-logs', {
    config: { auth },
    schema: { tags, operationId: 'auditLogs.list', summary: 'List audit log entries, newest first', description: 'Entries of your organization, newest first, filtered by action, resourceType, resourceId, userId and from/to. Entries are append-only and hash-chained.', querystring: listAuditQuery, response: { 200: pageSchema(auditEntrySchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await listAudit(db, principalOf(req).organizationId, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.get('/audit-logs/verify', {
    config: { auth },
    schema: {
      tags,
      operationId: 'auditLogs.verify', summary: 'Verify the hash chain and the latest signed checkpoints', description: 'Recomputes the whole hash chain of your organization and checks the latest signed checkpoints; `valid` is false when anything was edited, removed or reordered, and `firstInvalid` names the first such entry, or the first entry after the last good checkpoint. Reads the whole log: slow on large logs.',
      response: { 200: dataSchema(verifySchema), ...errorResponses },
    },
  }, async (req) => one(await verifyChain(db, principalOf(req).organizationId, { signer: audit.signer, pageSize: audit.verifyPageSize })));

  r.get('/audit-logs/checkpoints', {
    config: { auth },
    schema: {
      tags,
      operationId: 'auditLogs.listCheckpoints', summary: 'List signed checkpoints of the chain head, newest first, with the public key to verify them offline', description: 'Each checkpoint signs the chain head (Ed25519); with the public key you can verify an exported log offline (`npm run audit:verify-offline`).',
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
      operationId: 'auditLogs.export', summary: 'Export matching entries as streamed JSON ({ data: [...] }) or CSV', description: 'Streams every matching entry (no page limit) as JSON or CSV; memory stays flat however many rows. CSV cells that would run as spreadsheet formulas are prefixed with a quote.',
      querystring: exportAuditQuery,
      response: { ...exportResponse(auditEntrySchema), ...errorResponses },
    },
  }, async (req, reply) => {
    const { format, ...filters } = req.query;
    return sendExport(reply, format, 'audit-log', AUDIT_COLUMNS, auditBatches(db, principalOf(req).organizationId, filters));
  });

  r.get('/audit-logs/:id', {
    config: { auth },
    schema: { tags, operationId: 'auditLogs.get', summary: 'Get one audit log entry', description: 'One entry, with its checksum and the previous checksum in the chain.', params: idParams, response: { 200: dataSchema(auditEntrySchema), ...errorResponses } },
  }, async (req) => one(await getAudit(db, principalOf(req).organizationId, req.params.id)));
}
