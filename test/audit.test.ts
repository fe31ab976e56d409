import { sql } from 'drizzle-orm';
import { describe, expect, it } from './fixture.js';
import { createOrg, type TestOrg } from './helpers.js';

const verify = async (org: TestOrg) => {
  const res = await org.req({ method: 'GET', url: '/api/v1/audit-logs/verify' });
  expect(res.statusCode).toBe(200);
  return res.json().data;
};

/**
 * n mutations sent at once, each writing one audit entry. API key creation (no expiry) takes no
 * other lock, so only the chain's own serialization keeps these writers from forking the chain.
 */
async function parallelMutations(org: TestOrg, n = 50) {
  const results = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      org.req({ method: 'POST', url: '/api/v1/api-keys', payload: { name: `k${i}`, environment: 'production', expiresAt: null } }),
    ),
  );
  expect(results.map((r) => r.statusCode)).toEqual(Array(n).fill(201));
}

const seqOf = async (org: TestOrg, n: number) => {
  const res = await org.req({ method: 'GET', url: `/api/v1/audit-logs?limit=100` });
  return res.json().data.find((e: { sequence: number }) => e.sequence === n);
};

describe('audit hash chain', () => {
  it('50 parallel mutations extend one unforked chain', async ({ freshOrg: org }) => {
    await parallelMutations(org);
    const v = await verify(org);
    expect(v).toMatchObject({ valid: true, firstInvalid: null });
    // organization.create + api_key.create at init, then the 50 mutations.
    expect(v.entriesChecked).toBe(52);
    const list = await org.req({ method: 'GET', url: '/api/v1/audit-logs?limit=100' });
    const seqs = list.json().data.map((e: { sequence: number }) => e.sequence).sort((a: number, b: number) => a - b);
    expect(seqs).toEqual(Array.from({ length: 52 }, (_, i) => i + 1));
    const checksums = new Set(list.json().data.map((e: { previousChecksum: string }) => e.previousChecksum));
    expect(checksums.size).toBe(52); // every entry links to a distinct predecessor: no fork
  });

  it('names the first entry whose row was edited directly in SQL', async ({ app, freshOrg: org }) => {
    await parallelMutations(org, 10);
    const target = await seqOf(org, 5);
    await app.database.db.execute(
      sql`update audit_logs set after_state = jsonb_set(after_state, '{name}', '"forged"') where id = ${target.id}`,
    );
    const v = await verify(org);
    expect(v.valid).toBe(false);
    expect(v.firstInvalid).toMatchObject({ id: target.id, seq: 5 });
    expect(v.firstInvalid.reason).toMatch(/edited/);
  });

  it('names the entry after one deleted in SQL', async ({ app, freshOrg: org }) => {
    await parallelMutations(org, 10);
    const gone = await seqOf(org, 6);
    const next = await seqOf(org, 7);
    await app.database.db.execute(sql`delete from audit_logs where id = ${gone.id}`);
    const v = await verify(org);
    expect(v.valid).toBe(false);
    expect(v.firstInvalid).toMatchObject({ id: next.id, seq: 7 });
  });

  it('detects the last entry removed and entries reordered', async ({ app, freshOrg: org }) => {
    await parallelMutations(org, 6);
    const last = await seqOf(org, 8);
    await app.database.db.execute(sql`delete from audit_logs where id = ${last.id}`);
    expect((await verify(org)).valid).toBe(false);

    const org2 = await createOrg(app);
    await parallelMutations(org2, 6);
    const a = await seqOf(org2, 3);
    const b = await seqOf(org2, 4);
    await app.database.db.execute(sql`update audit_logs set seq = -1 where id = ${a.id}`);
    await app.database.db.execute(sql`update audit_logs set seq = 3 where id = ${b.id}`);
    await app.database.db.execute(sql`update audit_logs set seq = 4 where id = ${a.id}`);
    const v = await verify(org2);
    expect(v.valid).toBe(false);
    expect(v.firstInvalid).toMatchObject({ id: b.id, seq: 3 });
  });
});

describe('/audit-logs', () => {
  it('filters, gets one entry, and hides other organizations', async ({ app, freshOrg: org }) => {
    const other = await createOrg(app);
    await org.req({ method: 'PATCH', url: '/api/v1/settings/security', payload: { enforce_mfa: true } });
    const list = await org.req({ method: 'GET', url: '/api/v1/audit-logs?action=security_settings.update' });
    expect(list.statusCode).toBe(200);
    expect(list.json().meta).toMatchObject({ total: 1, limit: 50, offset: 0 });
    const entry = list.json().data[0];
    expect(entry).toMatchObject({
      action: 'security_settings.update', resourceType: 'security_settings', result: 'success',
      beforeState: { enforceMfa: false }, afterState: { enforceMfa: true }, ipAddress: '127.0.0.1',
    });
    expect(entry.checksum).toMatch(/^[0-9a-f]{64}$/);
    expect((await org.req({ method: 'GET', url: `/api/v1/audit-logs/${entry.id}` })).json().data.id).toBe(entry.id);
    expect((await other.req({ method: 'GET', url: `/api/v1/audit-logs/${entry.id}` })).statusCode).toBe(404);
    const otherList = await other.req({ method: 'GET', url: '/api/v1/audit-logs?limit=100' });
    expect(otherList.json().data.some((e: { id: string }) => e.id === entry.id)).toBe(false);
    const future = await org.req({ method: 'GET', url: '/api/v1/audit-logs?from=2999-01-01T00:00:00Z' });
    expect(future.json().meta.total).toBe(0);
  });

  it('exports as streamed JSON and CSV with the filters applied', async ({ freshOrg: org }) => {
    await parallelMutations(org, 3);
    const json = await org.req({ method: 'GET', url: '/api/v1/audit-logs/export?action=api_key.create' });
    expect(json.statusCode).toBe(200);
    expect(json.headers['content-type']).toMatch(/application\/json/);
    expect(json.json().data).toHaveLength(4); // 3 + the initial admin key
    const csv = await org.req({ method: 'GET', url: '/api/v1/audit-logs/export?format=csv' });
    expect(csv.headers['content-type']).toMatch(/text\/csv/);
    const lines = csv.body.trim().split('\n');
    expect(lines[0].split(',').slice(0, 3)).toEqual(['id', 'sequence', 'userId']);
    expect(lines).toHaveLength(1 + 5);
    expect((await org.req({ method: 'GET', url: '/api/v1/audit-logs/export?format=xml' })).statusCode).toBe(422);
  });
});
