import { bigint, boolean, foreignKey, index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { tenantColumns, tenantPrimaryKey, timestampColumns } from './columns.js';
import { agents } from './agents.js';

/** API keys: only the SHA-256 of the key is stored; the key itself is shown once. */
export const apiKeys = pgTable(
  'api_keys',
  {
    ...tenantColumns(),
    /** Set for agent-scoped keys: the key may only act for this agent. */
    agentId: uuid('agent_id'),
    name: text('name').notNull(),
    description: text('description'),
    keyPrefix: text('key_prefix').notNull(),
    keyHash: text('key_hash').notNull(),
    environment: text('environment').notNull(),
    scopes: text('scopes').array().notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    usageCount: bigint('usage_count', { mode: 'number' }).notNull().default(0),
    isActive: boolean('is_active').notNull().default(true),
    ipAllowlist: text('ip_allowlist').array(),
    ...timestampColumns(),
    createdBy: text('created_by').notNull(),
  },
  (t) => [
    tenantPrimaryKey(t),
    // An agent-scoped key belongs to an agent of its own organization (no check when agent_id is null).
    foreignKey({ name: 'api_keys_agent_fk', columns: [t.organizationId, t.agentId], foreignColumns: [agents.organizationId, agents.id] }).onDelete('cascade'),
    // No index on key_hash: authentication finds the key through api_key_hashes (below), whose
    // primary key also keeps hashes unique across organizations. A global unique index here could
    // not be enforced across Citus shards: see docs/decisions.md ("Data model: keys by organization").
    // Listing an organization's keys, newest first.
    index('api_keys_org_created_idx').on(t.organizationId, t.createdAt),
  ],
);

/**
 * The one global read: a key's hash → its organization and id (authentication does not know the
 * organization yet). A Citus reference table; written in the same transaction as every change of a
 * key's hash (src/domains/api-keys/hashes.ts). No foreign key to api_keys on purpose: a reference
 * table cannot reference a distributed table; a hash left behind by a cascade finds no key, because
 * the lookup joins api_keys (docs/decisions.md, "Data model: keys by organization").
 */
export const apiKeyHashes = pgTable('api_key_hashes', {
  keyHash: text('key_hash').primaryKey(),
  organizationId: uuid('organization_id').notNull(),
  apiKeyId: uuid('api_key_id').notNull(),
});
