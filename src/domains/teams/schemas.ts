import { z } from 'zod';
import { isoDateTimeOut } from '../../http/envelope.js';
import { pagination, str } from '../../http/validation.js';

export const teamSchema = z
  .object({
    id: z.uuid(),
    organizationId: z.uuid(),
    name: z.string(),
    description: z.string().nullable(),
    memberCount: z.number().int(),
    createdAt: isoDateTimeOut(),
    updatedAt: isoDateTimeOut(),
  })
  .meta({ id: 'Team' });

// email and name come from identity-provider claims (or the CLI) and may be absent, so both are
// nullable and email is not format-checked on the way out: a response must never fail its schema.
export const teamMemberSchema = z
  .object({
    id: z.uuid(),
    email: z.string().nullable(),
    name: z.string().nullable(),
    role: z.string(),
    addedAt: isoDateTimeOut(),
  })
  .meta({ id: 'TeamMember' });

export const teamWithMembersSchema = teamSchema.extend({ members: z.array(teamMemberSchema) }).meta({ id: 'TeamWithMembers' });

export const createTeamInput = z
  .object({
    name: str(1, 100),
    description: str(0, 500).nullable().optional(),
  })
  .meta({ id: 'CreateTeamInput' });

export const updateTeamInput = z
  .object({
    name: str(1, 100).optional(),
    description: str(0, 500).nullable().optional(),
  })
  .meta({ id: 'UpdateTeamInput' });

export const addTeamMemberInput = z
  .object({
    userId: z.uuid(),
    role: str(1, 50).default('member'),
  })
  .meta({ id: 'AddTeamMemberInput' });

export const listTeamsQuery = z.object({
  ...pagination,
  // Matches name or description, case-insensitively, as plain text (% and _ are not wildcards).
  search: str(0, 200).optional(),
});

export const listMembersQuery = z.object({ ...pagination });

/** Path of a membership: both ids are uuids, so a malformed one is a 404. */
export const memberParams = z.object({ id: z.uuid(), userId: z.uuid() });

export type CreateTeamInput = z.infer<typeof createTeamInput>;
export type UpdateTeamInput = z.infer<typeof updateTeamInput>;
export type AddTeamMemberInput = z.infer<typeof addTeamMemberInput>;
