/** The audit module: the per-organization hash-chained audit log. */
import { defineModule } from '../../core/module.js';
import { auditRoutes } from './routes.js';
import { initChain, verifyChain, writeAudit } from './service.js';

export const auditModule = defineModule({
  name: 'audit',
  routes: auditRoutes,
  needs: ['db'],
  services: ({ db }) => ({
    /** Checks the organization's chain. */
    verify: (orgId: string) => verifyChain(db, orgId),
    initChain,
    writeAudit,
  }),
  jobs: [],
  schedules: [],
  caches: [],
});
