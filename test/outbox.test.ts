import { createHash } from 'node:crypto';
import { eq, inArray } from 'drizzle-orm';
import { outboxEvents } from '../src/db/schema/index.js';
import { deleteProcessedEvents, emit, markEventsProcessed } from '../src/domains/events/outbox.js';
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

describe('outbox retention (OUTBOX_RETENTION_DAYS, default 7)', () => {
  const DAY = 86_400_000;

  it('deletes processed events older than the cutoff at the injected clock; keeps newer and pending ones', async ({ app, freshOrg: org }) => {
    const db = app.database.db;
    const start = app.clock.now();
    const [oldDone, recentDone, oldPending] = await Promise.all((['agent_registered', 'agent_updated', 'agent_deleted'] as const).map((type) => emit(db, org.orgId, type, null, {})));
    const ids = [oldDone.id, recentDone.id, oldPending.id];
    const keys = (e: { id: string }) => ({ organizationId: org.orgId, id: e.id });
    await markEventsProcessed(db, [keys(oldDone)], start);
    await markEventsProcessed(db, [keys(recentDone)], new Date(start.getTime() + 6 * DAY)); // dispatched late
    const left = async () => (await db.select({ id: outboxEvents.id }).from(outboxEvents).where(inArray(outboxEvents.id, ids))).map((r) => r.id).sort();

    app.clock.advance(8 * DAY); // cutoff: a day after start
    try {
      // Retention off: nothing goes.
      expect(await deleteProcessedEvents(db, 0, app.clock.now())).toEqual({ deleted: 0, more: false });
      expect(await left()).toEqual([...ids].sort());

      const run = await app.container.services.events.deleteProcessed();
      expect(run.more).toBe(false);
      expect(run.deleted).toBeGreaterThanOrEqual(1);
      // The old processed event is gone; the one processed after the cutoff and the pending one (however old) stay.
      expect(await left()).toEqual([recentDone.id, oldPending.id].sort());
      const [pending] = await db.select().from(outboxEvents).where(eq(outboxEvents.id, oldPending.id));
      expect(pending.status).toBe('pending');

      // A week later the late one is old too; the pending one still stays.
      app.clock.advance(7 * DAY);
      await app.container.services.events.deleteProcessed();
      expect(await left()).toEqual([oldPending.id]);
    } finally {
      app.clock.set(start);
    }
  });
});
