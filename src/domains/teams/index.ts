/** The teams module: teams and their members; pages of GET /teams are response-cached. */
import { defineModule } from '../../core/module.js';
import { TEAMS_RESPONSE_CACHE } from '../../core/cache-names.js';
import { teamRoutes } from './routes.js';
import { getTeam } from './service.js';

// What other domains call: the teams tables stay this module's.
export { isLiveTeam } from './service.js';

export const teamsModule = defineModule({
  name: 'teams',
  routes: teamRoutes,
  needs: ['db'],
  services: ({ db }) => ({
    /** A live team with its members, or NOT_FOUND. */
    get: (orgId: string, id: string) => getTeam(db, orgId, id),
  }),
  caches: [TEAMS_RESPONSE_CACHE],
});
