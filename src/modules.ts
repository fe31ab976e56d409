/**
 * Every domain of the application, in the order their routes are registered (and listed in the
 * API description). Adding a domain is one line here: its src/domains/<name>/index.ts module.
 */
import { healthModule } from './domains/health/index.js';
import { apiKeysModule } from './domains/api-keys/index.js';
import { settingsModule } from './domains/settings/index.js';
import { teamsModule } from './domains/teams/index.js';
import { savedFiltersModule } from './domains/saved-filters/index.js';
import { auditModule } from './domains/audit/index.js';
import { agentsModule } from './domains/agents/index.js';
import { tracesModule } from './domains/traces/index.js';
import { eventsModule } from './domains/events/index.js';
import { organizationsModule } from './domains/organizations/index.js';
import { usersModule } from './domains/users/index.js';
import { policiesModule } from './domains/policies/index.js';
import { accessGrantsModule } from './domains/access-grants/index.js';
import { notificationChannelsModule } from './domains/notification-channels/index.js';
import { policyDecisionsModule } from './domains/policy-decisions/index.js';
import { webhooksModule } from './domains/webhooks/index.js';
import type { DomainModule, ModuleDeps } from './core/module.js';

export const modules = [
  healthModule,
  apiKeysModule,
  settingsModule,
  teamsModule,
  savedFiltersModule,
  auditModule,
  agentsModule,
  tracesModule,
  eventsModule,
  organizationsModule,
  usersModule,
  policiesModule,
  accessGrantsModule,
  notificationChannelsModule,
  policyDecisionsModule,
  webhooksModule,
] as const;

type AnyModule = (typeof modules)[number];

/** The services of every module, by module name. */
export type Services = { [M in AnyModule as M['name']]: ReturnType<M['services']> };

/** Builds every module's services, each from only the dependencies it declares. */
export function buildServices(deps: ModuleDeps): Services {
  const out: Record<string, unknown> = {};
  for (const m of modules) {
    const declared = Object.fromEntries(m.needs.map((k) => [k, deps[k]]));
    out[m.name] = (m.services as (d: Partial<ModuleDeps>) => unknown)(declared);
  }
  return out as Services;
}

/** Each module with its own services, in registration order (for the hooks: job types, schedules, local tasks). */
export function withOwnServices(services: Services): { module: DomainModule; own: unknown }[] {
  return (modules as readonly DomainModule[]).map((m) => ({ module: m, own: (services as Record<string, unknown>)[m.name] }));
}
