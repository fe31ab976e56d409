/**
 * One log line per request, at completion (docs/decisions.md, "One log line per request"): method,
 * path without the query string (query values can hold search text), status, duration and the
 * request id (pino's `reqId`, from the request's child logger).
 */
import type { FastifyInstance } from 'fastify';

/** Logs each finished request once at info; Fastify's own two lines are off (`disableRequestLogging`). */
export function registerRequestLog(app: FastifyInstance) {
  app.addHook('onResponse', async (request, reply) => {
    // The URL as the client sent it (before the /api → /api/v1 alias rewrite), cut at the query.
    const url = request.originalUrl;
    const q = url.indexOf('?');
    request.log.info(
      {
        method: request.method,
        path: q === -1 ? url : url.slice(0, q),
        statusCode: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 10) / 10,
      },
      'request',
    );
  });
}
