/** The settings module: an organization's security and general settings. */
import { defineModule } from '../../core/module.js';
import { AUTH_ORG_CACHE } from '../../core/cache-names.js';
import { settingsRoutes } from './routes.js';
import { getOrganization, orgView, securityView } from './service.js';

// What other domains call: the settings columns of organizations stay this module's.
export { defaultKeyExpiryDays } from './service.js';
export { securityOf } from './lookup.js';

export const settingsModule = defineModule({
  name: 'settings',
  routes: settingsRoutes,
  needs: ['db'],
  services: ({ db }) => ({
    /** The organization's security settings. */
    security: async (orgId: string) => securityView(await getOrganization(db, orgId)),
    /** The organization's general settings. */
    organization: async (orgId: string) => orgView(await getOrganization(db, orgId)),
  }),
  caches: [AUTH_ORG_CACHE],
});
