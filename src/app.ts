/**
 * buildApp(deps): the HTTP application: plugins, hooks and routes. No global state: everything
 * comes from `deps`, so tests build as many isolated apps as they like.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
} from 'fastify-type-provider-zod';
import type { Config } from './config.js';
import type { Database, Db } from './db/client.js';
import type { SharedState } from './lib/shared-state.js';
import { ResponseCache } from './lib/response-cache.js';
import { trustProxyOption } from './lib/ip.js';
import { serializeError } from './lib/log-error.js';
import { Authenticator, registerAuth, UsageRecorder } from './http/auth.js';
import { frameworkErrorHandler, registerErrorHandling } from './http/errors.js';
import { registerDeprecatedAlias, rewriteDeprecatedAlias } from './http/deprecation.js';
import { apiKeyRoutes } from './domains/api-keys/routes.js';
import { auditRoutes } from './domains/audit/routes.js';
import { agentRoutes } from './domains/agents/routes.js';
import { traceRoutes } from './domains/traces/routes.js';
import { loadPriceTable, Pricing } from './domains/traces/pricing.js';
import { noSubscriptions, type Subscriptions } from './domains/events/subscriptions.js';
import { healthRoutes, probeRoutes } from './domains/health/routes.js';
import { settingsRoutes } from './domains/settings/routes.js';
import { teamRoutes } from './domains/teams/routes.js';
import { savedFilterRoutes } from './domains/saved-filters/routes.js';

export interface AppDeps {
  config: Config;
  database: Database;
  state: SharedState;
  /** Where logs go (default stdout); tests pass a stream to read them. */
  logStream?: DestinationStream;
}

export interface AppServices {
  config: Config;
  database: Database;
  db: Db;
  state: SharedState;
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
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const app = Fastify({
    logger: {
      level: config.LOG_LEVEL,
      // Credentials never reach the logs.
      redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie'],
      // Errors are logged without query text, parameters or row values (docs/decisions.md, "Security hardening").
      serializers: { err: serializeError },
      ...(deps.logStream ? { stream: deps.logStream } : {}),
    },
    trustProxy: trustProxyOption(config.TRUST_PROXY),
    bodyLimit: config.BODY_LIMIT_BYTES,
    requestIdHeader: false,
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
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  const usage = new UsageRecorder(deps.database.db, app.log);
  const auth = new Authenticator(deps.database.db, config, deps.state, usage);
  const pricing = new Pricing(loadPriceTable(config.PRICE_TABLE_PATH));
  const cache = new ResponseCache(deps.state);
  app.decorate('deps', { ...deps, db: deps.database.db, auth, usage, pricing, subscriptions: noSubscriptions, cache });
  app.addHook('onClose', async () => usage.stop());

  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
  registerDeprecatedAlias(app, config.API_ALIAS_SUNSET);
  registerErrorHandling(app);
  registerAuth(app, { auth, state: deps.state, config });
  // The API description and its browser UI are public.
  app.addHook('onRoute', (route) => {
    if (route.url === '/api-docs' || route.url.startsWith('/api-docs/')) route.config = { ...route.config, auth: { public: true } };
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agent Governance Control Plane API',
        description:
          'Register agents, ingest traces, enforce policies, track budgets and keep a tamper-evident audit log. ' +
          'Authenticate with `X-API-Key: svc_<env>_…`, `Authorization: Bearer svc_<env>_…`, or `Authorization: Bearer <JWT>`.',
        version: '1.0.0',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          bearer: { type: 'http', scheme: 'bearer', description: 'An API key (svc_…) or a JWT from the identity provider' },
        },
      },
      security: [{ apiKey: [] }, { bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(swaggerUi, { routePrefix: '/api-docs', uiConfig: { deepLinking: true } });
  app.get('/api-docs.json', { config: { auth: { public: true } }, schema: { hide: true } }, async () => app.swagger());

  await app.register(probeRoutes);
  await app.register(
    async (v1) => {
      await v1.register(healthRoutes);
      await v1.register(apiKeyRoutes);
      await v1.register(settingsRoutes);
      await v1.register(teamRoutes);
      await v1.register(savedFilterRoutes);
      await v1.register(auditRoutes);
      await v1.register(agentRoutes);
      await v1.register(traceRoutes);
    },
    { prefix: '/api/v1' },
  );
  return app;
}
