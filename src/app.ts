/**
 * buildApp(deps): the HTTP application: plugins, hooks and the routes of every module
 * (src/modules.ts). No global state: everything comes from the container (src/container.ts), so
 * tests build as many isolated apps as they like.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import type { DestinationStream } from 'pino';
import { serializerCompiler } from 'fastify-type-provider-zod';
import type { ResponseCache } from './lib/response-cache.js';
import { trustProxyOption } from './lib/ip.js';
import { serializeError } from './lib/log-error.js';
import { Authenticator, registerAuth, UsageRecorder } from './http/auth.js';
import { frameworkErrorHandler, registerErrorHandling } from './http/errors.js';
import { registerStrictInput } from './http/strict-input.js';
import { registerDeprecatedAlias, rewriteDeprecatedAlias } from './http/deprecation.js';
import { OneLinePerRequest } from './http/request-log.js';
import { registerOpenApi } from './http/openapi.js';
import type { Pricing } from './domains/traces/pricing.js';
import type { Subscriptions } from './domains/events/subscriptions.js';
import { assemble, type Container, type Infrastructure } from './container.js';
import { modules, withOwnServices } from './modules.js';

/** A built container, or what one is assembled from (config, database, shared state). */
export type AppDeps = (Container | Infrastructure) & {
  /** Where logs go (default stdout); tests pass a stream to read them. */
  logStream?: DestinationStream;
};

export interface AppServices extends Container {
  auth: Authenticator;
  usage: UsageRecorder;
  pricing: Pricing;
  subscriptions: Subscriptions;
  cache: ResponseCache;
}

declare module 'fastify' {
  interface FastifyInstance {
    deps: AppServices;
  }
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the API application (not listening yet). */
export async function buildApp(input: AppDeps): Promise<FastifyInstance> {
  const deps: Container = 'services' in input ? input : assemble(input);
  const { config } = deps;
  const app = Fastify({
    logger: {
      level: config.LOG_LEVEL,
      // Credentials never reach the logs.
      redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie'],
      // Errors are logged without query text, parameters or row values (docs/decisions.md, "Security hardening").
      serializers: { err: serializeError },
      ...(input.logStream ? { stream: input.logStream } : {}),
    },
    trustProxy: trustProxyOption(config.TRUST_PROXY),
    bodyLimit: config.BODY_LIMIT_BYTES,
    requestIdHeader: false,
    // One line per request instead of two (src/http/request-log.ts).
    logController: new OneLinePerRequest(),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : randomUUID();
    },
    rewriteUrl: rewriteDeprecatedAlias,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors: frameworkErrorHandler,
  });
  registerStrictInput(app);
  app.setSerializerCompiler(serializerCompiler);

  deps.afterCommit.useLogger(app.log);
  const usage = new UsageRecorder(deps.database.db, app.log);
  const auth = new Authenticator(deps.database.db, config, deps.state, usage, deps.clock);
  const { pricing } = deps.services.traces;
  // Who listens to which event: the webhooks module's cache (docs/decisions.md, "Webhooks").
  const { subscriptions } = deps.services.webhooks;
  app.decorate('deps', { ...deps, auth, usage, pricing, subscriptions, cache: deps.responseCache });
  app.addHook('onClose', async () => usage.stop());
  // The modules' process-local tasks run once more at close (after the last request), so what they buffer is written.
  app.addHook('onClose', async () => {
    for (const { module: m, own } of withOwnServices(deps.services)) {
      for (const t of m.localTasks?.(own) ?? []) await t.run(app.log);
    }
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
  registerDeprecatedAlias(app, config.API_ALIAS_SUNSET);
  registerErrorHandling(app);
  registerAuth(app, { auth, state: deps.state, config, clock: deps.clock });
  await registerOpenApi(app);

  // Core types a module's routes loosely (it knows nothing of HTTP); here they are Fastify plugins.
  const plugin = (routes: unknown) => routes as FastifyPluginAsync;
  for (const m of modules) if ('rootRoutes' in m && m.rootRoutes) await app.register(plugin(m.rootRoutes));
  await app.register(
    async (v1) => {
      for (const m of modules) if ('routes' in m && m.routes) await v1.register(plugin(m.routes));
    },
    { prefix: '/api/v1' },
  );
  return app;
}
