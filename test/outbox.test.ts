import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { outboxEvents } from '../src/db/schema/index.js';
import { emit } from '../src/domains/events/outbox.js';
import { createOrg, createTestApp, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('event outbox', () => {
  it('an event commits with its transaction, with a fixed body and idempotency key', async () => {
    const org = await createOrg(t);
    const ev = await t.database.db.transaction((tx) => emit(tx, org.orgId, 'agent_registered', null, { name: 'bot' }));
    const [row] = await t.database.db.select().from(outboxEvents).where(eq(outboxEvents.id, ev.id));
    expect(row).toMatchObject({ organizationId: org.orgId, type: 'agent_registered', status: 'pending', attempts: 0 });
    const body = JSON.parse(row.body);
    expect(Object.keys(body)).toEqual(['id', 'type', 'createdAt', 'organizationId', 'agentId', 'data']);
    expect(body).toMatchObject({ id: ev.id, type: 'agent_registered', organizationId: org.orgId, agentId: null, data: { name: 'bot' } });
    const expected = createHash('sha256').update(`${org.orgId}\nagent_registered\n${row.body}`).digest('hex');
    expect(row.idempotencyKey).toBe(expected);
  });

  it('an event rolls back with its transaction', async () => {
    const org = await createOrg(t);
    let id = '';
    await expect(
      t.database.db.transaction(async (tx) => {
        id = (await emit(tx, org.orgId, 'kill_switch_triggered', null, {})).id;
        throw new Error('change failed');
      }),
    ).rejects.toThrow('change failed');
    expect(id).not.toBe('');
    expect(await t.database.db.select().from(outboxEvents).where(eq(outboxEvents.id, id))).toHaveLength(0);
  });
});
