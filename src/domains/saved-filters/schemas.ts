import { z } from 'zod';
import { isoDateTimeOut } from '../../http/envelope.js';
import { jsonObject, pagination, str } from '../../http/validation.js';

export const RESOURCE_TYPES = ['agents', 'incidents', 'traces', 'policies', 'executions'] as const;
export const resourceTypeEnum = z.enum(RESOURCE_TYPES);
export type ResourceType = z.infer<typeof resourceTypeEnum>;

/** The response is camelCase like every resource; only the inputs are snake_case (specification). */
export const savedFilterSchema = z
  .object({
    id: z.uuid(),
    organizationId: z.uuid(),
    userId: z.string(),
    name: z.string(),
    resourceType: resourceTypeEnum,
    filterConfig: z.record(z.string(), z.unknown()),
    isDefault: z.boolean(),
    createdAt: isoDateTimeOut(),
    updatedAt: isoDateTimeOut(),
  })
  .meta({ id: 'SavedFilter' });

export const createSavedFilterInput = z
  .object({
    name: str(1, 100),
    resource_type: resourceTypeEnum,
    filter_config: jsonObject().default({}),
    is_default: z.boolean().default(false),
  })
  .meta({ id: 'CreateSavedFilterInput' });

// The resource type of a filter is fixed at creation: its filterConfig only makes sense for that list.
export const updateSavedFilterInput = z
  .object({
    name: str(1, 100).optional(),
    filter_config: jsonObject().optional(),
    is_default: z.boolean().optional(),
  })
  .meta({ id: 'UpdateSavedFilterInput' });

export const listSavedFiltersQuery = z.object({
  ...pagination,
  resource_type: resourceTypeEnum.optional(),
});

export type CreateSavedFilterInput = z.infer<typeof createSavedFilterInput>;
export type UpdateSavedFilterInput = z.infer<typeof updateSavedFilterInput>;
