/** Creating organizations with their first admin key (CLI `agov init` and headless first start). */
import { count, eq, sql } from 'drizzle-orm';
import type { Db, Executor, Tx } from '../../db/client.js';
import { systemActor } from '../../core/actor.js';
import { systemClock, type Clock } from '../../core/clock.js';
import { organizations } from '../../db/schema/index.js';
import { ALL_SCOPES, type Scope } from '../../http/principal.js';
import type { Environment } from '../../http/validation.js';
import { apiKeyView, environmentOfKey, generateKey, insertKey } from '../api-keys/index.js';
import { initChain, writeAudit, type AuditContext } from '../audit/service.js';
import { conflict } from '../../core/errors.js';

export const SYSTEM_ACTOR = 'system';

export interface CreateOrganizationInput {
  name: string;
  key?: string;
  environment?: Environment;
  actor?: string;
  clock?: Clock;
  /** Create it even when another organization has this name (`agov init --force`); refused otherwise. */
  allowDuplicateName?: boolean;
}

/**
 * Creates an organization, its audit chain and an admin API key (all scopes, no expiry), in one
 * transaction. `key` may be supplied (headless init); otherwise one is generated. A name another
 * organization already has is a conflict unless `allowDuplicateName` (docs/decisions.md, "First start").
 */
export async function createOrganization(db: Db, input: CreateOrganizationInput) {
  return db.transaction((tx) => createOrganizationIn(tx, input));
}

/** createOrganization inside an open transaction (the first start runs it under its own lock). */
export async function createOrganizationIn(tx: Tx, input: CreateOrganizationInput) {
  let environment: Environment = input.environment ?? 'production';
  if (input.key) {
    const env = environmentOfKey(input.key);
    if (!env) throw new Error('The admin key must look like svc_prod_|svc_stg_|svc_dev_ followed by at least 32 characters [A-Za-z0-9_-]');
    environment = env;
  }
  const key = input.key ?? generateKey(environment);
  const actor = input.actor ?? SYSTEM_ACTOR;
  // Names are not unique in the schema: a per-name lock makes the check hold against a concurrent `agov init`.
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`organization_name:${input.name}`}, 0))`);
  const [same] = await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.name, input.name)).limit(1);
  if (same && !input.allowDuplicateName) throw conflict(`An organization named "${input.name}" already exists (${same.id})`);
  const [org] = await tx.insert(organizations).values({ name: input.name }).returning();
  await initChain(tx, org.id);
  const ctx: AuditContext = { principal: systemActor(org.id, actor), ip: null, userAgent: null, clock: input.clock ?? systemClock };
  await writeAudit(tx, ctx, { action: 'organization.create', resourceType: 'organization', resourceId: org.id, after: { id: org.id, name: org.name } });
  const row = await insertKey(tx, {
    organizationId: org.id,
    key,
    name: 'Initial admin key',
    environment,
    scopes: [...ALL_SCOPES] as Scope[],
    createdBy: actor,
  });
  await writeAudit(tx, ctx, { action: 'api_key.create', resourceType: 'api_key', resourceId: row.id, after: apiKeyView(row) });
  return { organization: org, apiKey: apiKeyView(row), key, duplicateOf: same?.id ?? null };
}

/** True when no organization exists yet. */
export async function isEmpty(db: Executor) {
  const [{ n }] = await db.select({ n: count() }).from(organizations);
  return n === 0;
}

/**
 * Headless first start: with both AGOV_INIT_ORG_NAME and AGOV_INIT_ADMIN_KEY set and an empty
 * database, creates that organization with that admin key. Answers what it did, for the log.
 */
export async function headlessInit(db: Db, orgName: string | undefined, adminKey: string | undefined, clock: Clock = systemClock) {
  if (!orgName && !adminKey) return { created: false as const, reason: 'not configured' };
  if (!orgName || !adminKey) return { created: false as const, reason: 'needs both AGOV_INIT_ORG_NAME and AGOV_INIT_ADMIN_KEY' };
  if (!(await isEmpty(db))) return { created: false as const, reason: 'the database already has an organization' };
  const { organization } = await createOrganization(db, { name: orgName, key: adminKey, actor: 'headless-init', clock });
  return { created: true as const, organizationId: organization.id, name: organization.name };
}

/** Every organization's id, in id order (for work done organization by organization, e.g. trace retention). */
export async function organizationIds(db: Executor): Promise<string[]> {
  const rows = await db.select({ id: organizations.id }).from(organizations).orderBy(organizations.id);
  return rows.map((r) => r.id);
}
