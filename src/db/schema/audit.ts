import { bigint, index, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.js';
import { createdAtColumn, tenantColumns, tenantPrimaryKey } from './columns.js';

/**
 * The audit log. Entries of an organization form a hash chain by `seq`:
 * checksum = sha256(prevChecksum + canonical), where `canonical` is the exact RFC 8785 text hashed
 * (kept because jsonb reorders keys and timestamps render differently when read back).
 */
export const auditLogs = pgTable(
  'audit_logs',
  {
    ...tenantColumns(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    userId: text('user_id').notNull(),
    userName: text('user_name'),
    userEmail: text('user_email'),
    action: text('action').notNull(),
    resourceType: text('resource_type').notNull(),
    resourceId: text('resource_id'),
    beforeState: jsonb('before_state'),
    afterState: jsonb('after_state'),
    metadata: jsonb('metadata'),
    ipAddress: text('ip_address'),
    userAgent: text('user_agent'),
    result: text('result'),
    errorMessage: text('error_message'),
    prevChecksum: text('prev_checksum').notNull(),
    checksum: text('checksum').notNull(),
    canonical: text('canonical').notNull(),
    timestamp: timestamp('timestamp', { withTimezone: true }).notNull(),
    createdAt: createdAtColumn(),
  },
  (t) => [
    tenantPrimaryKey(t),
    // The chain order; also serves listing newest-first and keyset export.
    uniqueIndex('audit_logs_org_seq_uq').on(t.organizationId, t.seq),
    // Filters: by resource (history of one thing) and by action.
    index('audit_logs_org_resource_idx').on(t.organizationId, t.resourceType, t.resourceId),
    index('audit_logs_org_action_idx').on(t.organizationId, t.action),
  ],
);

/**
 * One row per organization holding the chain head. Appending locks this row (UPDATE), which
 * serializes appends per organization so concurrent writers never fork the chain.
 */
export const auditChainHeads = pgTable('audit_chain_heads', {
  organizationId: uuid('organization_id')
    .primaryKey()
    .references(() => organizations.id, { onDelete: 'cascade' }),
  seq: bigint('seq', { mode: 'number' }).notNull().default(0),
  checksum: text('checksum').notNull(),
});

/**
 * Signed checkpoints of an organization's chain head (docs/decisions.md "Audit checkpoints"):
 * Ed25519 over `message`, the canonical text of (organizationId, seq, checksum, signedAt). The public
 * key is kept on each row so an auditor can verify offline; the server trusts only the key it holds.
 */
export const auditCheckpoints = pgTable(
  'audit_checkpoints',
  {
    ...tenantColumns(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    checksum: text('checksum').notNull(),
    signedAt: timestamp('signed_at', { withTimezone: true }).notNull(),
    keyId: text('key_id').notNull(),
    publicKey: text('public_key').notNull(),
    message: text('message').notNull(),
    signature: text('signature').notNull(),
  },
  (t) => [
    tenantPrimaryKey(t),
    // One checkpoint per head position and key (a second signer run is a no-op); also the
    // "latest checkpoint by this key" lookup of createDueCheckpoints.
    uniqueIndex('audit_checkpoints_org_key_seq_uq').on(t.organizationId, t.keyId, t.seq),
    // Newest-first listing and verification across keys.
    index('audit_checkpoints_org_seq_idx').on(t.organizationId, t.seq),
  ],
);
