/** Per-request helpers shared by route handlers. */
import type { FastifyRequest } from 'fastify';
import type { AuditContext } from '../domains/audit/service.js';
import type { Principal } from './principal.js';
import { unauthorized } from '../core/errors.js';

/** The authenticated principal (the auth hook guarantees it on non-public routes). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized();
  return request.principal;
}

/** Who, from where and by which clock, for audit entries and the rules of the change. */
export function auditContext(request: FastifyRequest): AuditContext {
  const ua = request.headers['user-agent'];
  return { principal: principalOf(request), ip: request.ip ?? null, userAgent: typeof ua === 'string' ? ua : null, clock: request.server.deps.clock };
}
