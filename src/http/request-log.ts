/**
 * One log line per request, at completion (docs/decisions.md, "One log line per request"): method,
 * path without the query string (query values can hold search text), status, duration and the
 * request id (pino's `reqId`, from the request's child logger).
 */
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/** Fastify's request log lines, replaced: nothing on arrival, one line on completion. */
export class OneLinePerRequest extends LogController {
  /** Silent: the completion line says everything. */
  override incomingRequest() {}

  /** The request's one line, at info (at error, with the error, when the response itself failed). */
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    // The URL as the client sent it (before the /api → /api/v1 alias rewrite), cut at the query.
    const url = request.originalUrl;
    const q = url.indexOf('?');
    const line = {
      method: request.method,
      path: q === -1 ? url : url.slice(0, q),
      statusCode: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request');
    else reply.log.info(line, 'request');
  }
}
