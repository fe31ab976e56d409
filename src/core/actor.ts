/**
 * Who makes a change: a signed-in user, an organization API key, an agent-scoped key, or the system
 * itself (budget enforcement, first start, the CLI). Audit entries and `createdBy` columns record it.
 * The HTTP Principal (src/http/principal.ts) is an Actor with a role and scopes.
 */
export type ActorKind = 'user' | 'api_key' | 'agent_key' | 'system';

export interface Actor {
  kind: ActorKind;
  organizationId: string;
  /** Stable id of the actor: the user's id, the API key's id, or the system reason. */
  userId: string;
  userName: string | null;
  userEmail: string | null;
  /** For agent-scoped keys: the only agent this actor may act for. */
  agentId?: string;
}

/**
 * The actor of an automatic change in an organization. `reason` is recorded as the actor's id
 * (e.g. `system:budget`, `cli`, `headless-init`); `name` is what the audit log shows.
 */
export function systemActor(organizationId: string, reason: string, name: string = reason): Actor {
  return { kind: 'system', organizationId, userId: reason, userName: name, userEmail: null };
}
