import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenantColumns, tenantPrimaryKey, timestampColumns } from './columns.js';

/** Saved list filters, owned by one user (userId is the principal's id). */
export const savedFilters = pgTable(
  'saved_filters',
  {
    ...tenantColumns(),
    userId: text('user_id').notNull(),
    name: text('name').notNull(),
    resourceType: text('resource_type').notNull(),
    filterConfig: jsonb('filter_config').$type<Record<string, unknown>>().notNull().default({}),
    isDefault: boolean('is_default').notNull().default(false),
    ...timestampColumns(),
  },
  (t) => [
    tenantPrimaryKey(t),
    // Listing a user's filters, optionally by resource type.
    index('saved_filters_owner_idx').on(t.organizationId, t.userId, t.resourceType),
    // At most one default per user and resource type (the service unsets the previous one).
    uniqueIndex('saved_filters_default_uq')
      .on(t.organizationId, t.userId, t.resourceType)
      .where(sql`${t.isDefault}`),
  ],
);
