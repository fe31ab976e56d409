import { boolean, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { newId } from './ids.js';

/** An organization (tenant). Security and organization settings live on the row: one read serves auth. */
export const organizations = pgTable('organizations', {
  id: uuid('id').primaryKey().$defaultFn(newId),
  name: text('name').notNull(),
  plan: text('plan').notNull().default('free'),
  complianceFrameworks: text('compliance_frameworks').array().notNull().default([]),
  dataResidency: text('data_residency').notNull().default('global'),
  ipAllowlist: text('ip_allowlist').array().notNull().default([]),
  allowedEnvironments: text('allowed_environments').array().notNull().default([]),
  defaultKeyExpiryDays: integer('default_key_expiry_days').notNull().default(30),
  enforceMfa: boolean('enforce_mfa').notNull().default(false),
  dashboardWidgets: text('dashboard_widgets').array().notNull().default([]),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});
