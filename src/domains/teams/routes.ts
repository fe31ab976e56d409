/** HTTP routes for /teams: anyone authenticated reads; changes need admin. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { conflictResponse, dataSchema, errorResponses, messageSchema, one, page, pageSchema, sendJsonText } from '../../http/envelope.js';
import { auditContext, principalOf } from '../../http/context.js';
import { idParams } from '../../http/validation.js';
import {
  addTeamMemberInput,
  createTeamInput,
  listMembersQuery,
  listTeamsQuery,
  memberParams,
  teamMemberSchema,
  teamSchema,
  teamWithMembersSchema,
  updateTeamInput,
} from './schemas.js';
import * as svc from './service.js';

const tags = ['Teams'];
const SCOPE = 'teams';
// The specification marks team create, update, delete and member changes ADMIN (scope admin for keys).
const admin = { scope: 'admin' as const };

/** Registers the /teams routes. */
export async function teamRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db, cache } = app.deps;

  // Pages of GET /teams are cached per organization (see ResponseCache). Every successful change
  // below (this plugin's hook only) invalidates them before its response is sent, so a client
  // always reads its own writes.
  app.addHook('onSend', async (req, reply, payload) => {
    if (req.method !== 'GET' && reply.statusCode < 300 && req.principal) {
      const orgId = req.principal.organizationId;
      await app.deps.afterCommit.run('teams: response cache version', () => cache.invalidate(orgId, SCOPE));
    }
    return payload;
  });

  r.get('/teams', {
    config: { auth: { anyPrincipal: true } },
    schema: { tags, operationId: 'teams.list', summary: 'List teams, ordered by name', description: 'Pages are cached per organization and invalidated by every team change, so you always read your own writes.', querystring: listTeamsQuery, response: { 200: pageSchema(teamSchema), ...errorResponses } },
  }, async (req, reply) => {
    const orgId = principalOf(req).organizationId;
    const key = JSON.stringify([req.query.search ?? null, req.query.limit, req.query.offset]);
    const cached = cache.get(orgId, SCOPE, key);
    if (cached !== undefined) return sendJsonText(reply, cached);
    const version = cache.version(orgId, SCOPE);
    const { rows, total } = await svc.listTeams(db, orgId, req.query);
    const body = JSON.stringify(page(rows, total, req.query.limit, req.query.offset));
    cache.set(orgId, SCOPE, version, key, body);
    return sendJsonText(reply, body);
  });

  r.post('/teams', {
    config: { auth: admin },
    schema: { tags, operationId: 'teams.create', summary: 'Create a team', description: 'Team names are unique within the organization among live teams (409 otherwise). Audited (`team.create`).', body: createTeamInput, response: { 201: dataSchema(teamSchema), ...errorResponses, ...conflictResponse } },
  }, async (req, reply) => reply.code(201).send(one(await svc.createTeam(db, auditContext(req), req.body))));

  r.get('/teams/:id', {
    config: { auth: { anyPrincipal: true } },
    schema: { tags, operationId: 'teams.get', summary: 'Get a team with its members', description: 'The team with its members.', params: idParams, response: { 200: dataSchema(teamWithMembersSchema), ...errorResponses } },
  }, async (req) => one(await svc.getTeam(db, principalOf(req).organizationId, req.params.id)));

  r.patch('/teams/:id', {
    config: { auth: admin },
    schema: { tags, operationId: 'teams.update', summary: 'Update a team', description: 'Only the given fields change; a new name must be free (409). Audited (`team.update`).', params: idParams, body: updateTeamInput, response: { 200: dataSchema(teamSchema), ...errorResponses, ...conflictResponse } },
  }, async (req) => one(await svc.updateTeam(db, auditContext(req), req.params.id, req.body)));

  r.delete('/teams/:id', {
    config: { auth: admin },
    schema: { tags, operationId: 'teams.delete', summary: 'Delete a team (soft delete; its name becomes free)', description: 'Soft delete: the team disappears from every list and its name can be reused. Audited (`team.delete`).', params: idParams, response: { 200: messageSchema, ...errorResponses } },
  }, async (req) => {
    await svc.deleteTeam(db, auditContext(req), req.params.id);
    return { message: 'Team deleted' };
  });

  r.get('/teams/:id/members', {
    config: { auth: { anyPrincipal: true } },
    schema: { tags, operationId: 'teams.listMembers', summary: "List a team's members", description: 'Members of one team: user id, email, name, role and when they were added.', params: idParams, querystring: listMembersQuery, response: { 200: pageSchema(teamMemberSchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listMembers(db, principalOf(req).organizationId, req.params.id, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/teams/:id/members', {
    config: { auth: admin },
    schema: { tags, operationId: 'teams.addMember', summary: 'Add a user of the organization to a team', description: 'The user must belong to your organization (404 otherwise); adding a member twice is 409. Audited (`team.member_add`).', params: idParams, body: addTeamMemberInput, response: { 201: messageSchema, ...errorResponses, ...conflictResponse } },
  }, async (req, reply) => {
    await svc.addMember(db, auditContext(req), req.params.id, req.body);
    return reply.code(201).send({ message: 'Member added' });
  });

  r.delete('/teams/:id/members/:userId', {
    config: { auth: admin },
    schema: { tags, operationId: 'teams.removeMember', summary: 'Remove a user from a team', description: '404 when the user is not a member. Audited (`team.member_remove`).', params: memberParams, response: { 200: messageSchema, ...errorResponses } },
  }, async (req) => {
    await svc.removeMember(db, auditContext(req), req.params.id, req.params.userId);
    return { message: 'Member removed' };
  });
}
