import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { outboxEvents } from '../src/db/schema/index.js';
import { emit } from '../src/domains/events/outbox.js';
import { describe, expect, it } from './fixture.js';
import { createOrg } from './helpers.js';

describe('event outbox', () => {
  it('an event commits with its transaction, with a fixed body and idempotency key', async ({ app, freshOrg: org }) => {
    const ev = await app.database.db.transaction((tx) => emit(tx, org.orgId, 'agent_registered', null, { name: 'bot' }));
    const [row] = await app.database.db.select().from(outboxEvents).where(eq(outboxEvents.id, ev.id));
    expect(row).toMatchObject({ organizationId: org.orgId, type: 'agent_registered', status: 'pending', attempts: 0 });
    const body = JSON.parse(row.body);
    expect(Object.keys(body)).toEqual(['id', 'type', 'createdAt', 'organizationId', 'agentId', 'data']);
    expect(body).toMatchObject({ id: ev.id, type: 'agent_registered', organizationId: org.orgId, agentId: null, data: { name: 'bot' } });
    const expected = createHash('sha256').update(`${org.orgId}\nagent_registered\n${row.body}`).digest('hex');
    expect(row.idempotencyKey).toBe(expected);
  });

  it('an event rolls back with its transaction', async ({ app, freshOrg: org }) => {
    let id = '';
    await expect(
      app.database.db.transaction(async (tx) => {
        id = (await emit(tx, org.orgId, 'kill_switch_triggered', null, {})).id;
        throw new Error('change failed');
      }),
    ).rejects.toThrow('change failed');
    expect(id).not.toBe('');
    expect(await app.database.db.select().from(outboxEvents).where(eq(outboxEvents.id, id))).toHaveLength(0);
  });
});
