/** The health module: liveness/readiness probes at the root and GET /health under /api/v1. */
import { defineModule } from '../../core/module.js';
import { healthRoutes, probeRoutes } from './routes.js';

export const healthModule = defineModule({
  name: 'health',
  routes: healthRoutes,
  rootRoutes: probeRoutes,
  needs: [],
  services: () => ({}),
  caches: [],
});
