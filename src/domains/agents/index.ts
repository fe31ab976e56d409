/** The agents module: registration, lifecycle, budgets, stats and agent-scoped keys. */
import type { Actor } from '../../core/actor.js';
import { defineModule } from '../../core/module.js';
import { AUTH_KEY_CACHE } from '../../core/cache-names.js';
import { agentRoutes } from './routes.js';
import { agentView, budgetView, getAgent, monthOf, pauseInTx } from './service.js';

// What other domains call (ingest, in its transaction): the agents table stays this module's.
export { agentUpdate, findAgents, healthObservations, settleBudgets, type AgentRow, type AgentSpend } from './accrual.js';
export { monthOf } from './service.js';
// The enforce route's fresh read of an agent (docs/decisions.md, "Enforce route").
export { findAgentForEnforcement, type EnforcementAgent } from './enforcement.js';

export const agentsModule = defineModule({
  name: 'agents',
  routes: agentRoutes,
  needs: ['db', 'clock'],
  services: ({ db, clock }) => ({
    /** The Agent resource of an agent the actor may see, or NOT_FOUND. */
    get: async (actor: Pick<Actor, 'organizationId' | 'agentId'>, id: string) => agentView(await getAgent(db, actor, id), clock.now()),
    /** Its budget, month-to-date spend and projection. */
    budget: async (actor: Pick<Actor, 'organizationId' | 'agentId'>, id: string) => budgetView(await getAgent(db, actor, id), clock.now()),
    /** The budget month now ('YYYY-MM', UTC). */
    currentMonth: () => monthOf(clock.now()),
    pauseInTx,
  }),
  // Deleting an agent key forgets it in the authentication cache.
  caches: [AUTH_KEY_CACHE],
});
