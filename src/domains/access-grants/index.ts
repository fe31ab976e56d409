/** The access grants module: grants that let an agent past an action_approval policy, and their lifecycle. */
import { defineModule } from '../../core/module.js';
import { accessGrantRoutes } from './routes.js';

// What the enforcement engine calls (docs/decisions.md, "Access grants"): the table stays this module's.
export { DEFAULT_GRANT_TTL_SECONDS, findLiveGrant, requestGrant, type GrantQuery, type GrantRequest } from './service.js';
export { parametersDigest } from '../policies/index.js';
export { accessGrantSchema, type AccessGrant } from './schemas.js';

export const accessGrantsModule = defineModule({
  name: 'access-grants',
  routes: accessGrantRoutes,
  needs: [],
  services: () => ({}),
  caches: [],
});
