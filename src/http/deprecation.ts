/**
 * The deprecated unversioned prefix: `/api/...` is served by the `/api/v1/...` routes (rewritten
 * before routing, so it costs nothing and can never drift), with Deprecation, Sunset and Link headers.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

const ALIASED = Symbol('deprecatedAlias');

/** Fastify `rewriteUrl`: maps /api/x to /api/v1/x and marks the request. */
export function rewriteDeprecatedAlias(req: IncomingMessage): string {
  const url = req.url ?? '/';
  if (url.startsWith('/api/') && !url.startsWith('/api/v1/') && url !== '/api/v1') {
    (req as unknown as Record<symbol, boolean>)[ALIASED] = true;
    return '/api/v1/' + url.slice(5);
  }
  return url;
}

/** Adds the deprecation headers to every response of an aliased request. */
export function registerDeprecatedAlias(app: FastifyInstance, sunsetDate: string) {
  const sunset = new Date(`${sunsetDate}T00:00:00Z`);
  const sunsetHeader = Number.isNaN(sunset.getTime()) ? sunsetDate : sunset.toUTCString();
  app.addHook('onRequest', async (request, reply) => {
    if (!(request.raw as unknown as Record<symbol, boolean>)[ALIASED]) return;
    reply.header('Deprecation', 'true');
    reply.header('Sunset', sunsetHeader);
    reply.header('Link', `<${request.url}>; rel="successor-version"`);
  });
}
