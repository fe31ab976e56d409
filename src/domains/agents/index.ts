/** The agents module: registration, lifecycle, budgets, stats and agent-scoped keys. */
import type { Actor } from '../../core/actor.js';
import { defineModule } from '../../core/module.js';
import { AUTH_KEY_CACHE } from '../../core/cache-names.js';
import { agentRoutes } from './routes.js';
import { AGENT_CACHE } from './agent-cache.js';
import { createAgentCache, createSpendCounter, findAgentForEnforcement } from './enforcement.js';
import type { SpendVersion } from './spend-counter.js';
import { agentView, budgetView, getAgent, monthOf, pauseInTx } from './service.js';

// What other domains call (ingest, in its transaction): the agents table stays this module's.
export { agentUpdate, findAgents, healthObservations, settleBudgets, spendVersions, type AgentRow, type AgentSpend } from './accrual.js';
export { type SpendVersion } from './spend-counter.js';
export { monthOf } from './service.js';
// The enforce route's agent (docs/decisions.md, "Enforce route").
export { type EnforcementAgent } from './enforcement.js';

export const agentsModule = defineModule({
  name: 'agents',
  routes: agentRoutes,
  needs: ['db', 'clock', 'state', 'database'],
  services: ({ db, clock, state, database }) => {
    const cache = createAgentCache(db, state);
    // Exact only where every writer shares the state (docs/decisions.md, "Spend counter").
    const spend = createSpendCounter(db, state, state.kind === 'redis' || database.kind === 'pglite');
    return {
      /** The Agent resource of an agent the actor may see, or NOT_FOUND. */
      get: async (actor: Pick<Actor, 'organizationId' | 'agentId'>, id: string) => agentView(await getAgent(db, actor, id), clock.now()),
      /** Its budget, month-to-date spend and projection. */
      budget: async (actor: Pick<Actor, 'organizationId' | 'agentId'>, id: string) => budgetView(await getAgent(db, actor, id), clock.now()),
      /** The budget month now ('YYYY-MM', UTC). */
      currentMonth: () => monthOf(clock.now()),
      pauseInTx,
      /** The Agent the enforce route names (uuid or external agentId), from the agent cache; null when unknown. */
      forEnforcement: (orgId: string, idOrExternal: string) => findAgentForEnforcement(cache, orgId, idOrExternal, clock.now()),
      /** The agent's month-to-date spend from the counter ingestion moves, else from its row (budget_cap). */
      monthSpend: (orgId: string, agentId: string) => spend.read(orgId, agentId, clock.now()),
      /** Records the spend versions of a committed accrual (ingest calls it after commit, before answering). */
      accrued: (orgId: string, versions: readonly SpendVersion[]) => spend.store(orgId, versions),
      /** Forgets agents of the organization (all without `ids`) on every instance: call after every committed change of their status or settings. */
      invalidate: (orgId: string, ids?: readonly string[]) => cache.invalidate(orgId, ids),
    };
  },
  // Deleting an agent key forgets it in the authentication cache; every agent write forgets the agent cache.
  caches: [AUTH_KEY_CACHE, AGENT_CACHE],
});
