import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from './fixture.js';
import { sql } from 'drizzle-orm';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../src/app.js';
import { createDueCheckpoints } from '../src/domains/audit/checkpoint-signing.js';
import { GENESIS } from '../src/domains/audit/chain.js';
import { verifyOffline } from '../src/domains/audit/offline.js';
import { walkChain } from '../src/domains/audit/service.js';
import { ephemeralSigner, KEY_FILE_NAME, loadAuditSigner } from '../src/domains/audit/signer.js';
import { createKey, createOrg, type TestApp, type TestOrg } from './helpers.js';

const signer = ephemeralSigner();
let t: TestApp;
/** An app vouching with `signer`, on the test database. */
let app: FastifyInstance;
/** The same, verifying in pages of 2 entries / checkpoints. */
let pagedApp: FastifyInstance;

beforeAll(async ({ app: fileApp }) => {
  t = fileApp;
  const deps = { config: t.app.deps.config, database: t.database, state: t.state };
  app = await buildApp({ ...deps, auditSigner: signer });
  pagedApp = await buildApp({ ...deps, auditSigner: signer, auditVerifyPageSize: 2 });
});
// The fixture closes the file's app (test/fixture.ts); these two share its database and state.
afterAll(async () => {
  await app.close();
  await pagedApp.close();
});

const T0 = new Date('2026-03-01T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

const get = (org: TestOrg, url: string, on = app) =>
  on.inject({ method: 'GET', url, headers: { 'x-api-key': org.key } } as InjectOptions);

async function verifyOf(org: TestOrg, on = app) {
  const res = await get(org, '/api/v1/audit-logs/verify', on);
  expect(res.statusCode).toBe(200);
  return res.json().data;
}

async function checkpointsOf(org: TestOrg, query = 'limit=100') {
  const res = await get(org, `/api/v1/audit-logs/checkpoints?${query}`);
  expect(res.statusCode).toBe(200);
  return res.json() as { data: Array<Record<string, string | number>>; meta: { total: number } };
}

/** n audited mutations (API key creations), one after another. */
async function mutate(org: TestOrg, n: number) {
  for (let i = 0; i < n; i++) {
    const res = await org.req({ method: 'POST', url: '/api/v1/api-keys', payload: { name: `k${i}`, environment: 'production' } });
    expect(res.statusCode).toBe(201);
  }
}

/** One run of the signer; answers the seqs it signed (or refused) for this organization only. */
async function sign(org: TestOrg, now: Date, everyEntries = 1000, everyMs = 3_600_000) {
  const run = await createDueCheckpoints({ db: t.database.db, signer, now, everyEntries, everyMs });
  return {
    created: run.created.filter((c) => c.organizationId === org.orgId).map((c) => c.seq),
    refused: run.refused.filter((c) => c.organizationId === org.orgId),
  };
}

async function entryAt(org: TestOrg, seq: number) {
  const res = await org.req({ method: 'GET', url: '/api/v1/audit-logs?limit=100' });
  return res.json().data.find((e: { sequence: number }) => e.sequence === seq) as { id: string; checksum: string };
}

/**
 * A database writer's rewrite: edits entry `seq` (column and hashed text alike), then recomputes
 * every later checksum and the chain head in SQL, so the plain chain check still passes.
 */
async function rewriteFrom(org: TestOrg, seq: number) {
  const org_ = `'${org.orgId}'`;
  await t.database.db.execute(
    sql.raw(`
    do $$
    declare prev text; r record;
    begin
      update audit_logs set action = 'forged.action',
        canonical = replace(canonical, '"action":"' || action || '"', '"action":"forged.action"')
        where organization_id = ${org_} and seq = ${seq};
      select checksum into prev from audit_logs where organization_id = ${org_} and seq = ${seq - 1};
      for r in select id, canonical from audit_logs where organization_id = ${org_} and seq >= ${seq} order by seq loop
        update audit_logs set prev_checksum = prev, checksum = encode(sha256(convert_to(prev || r.canonical, 'UTF8')), 'hex')
          where id = r.id returning checksum into prev;
      end loop;
      update audit_chain_heads set checksum = prev where organization_id = ${org_};
    end $$;`),
  );
}

describe('audit checkpoints', () => {
  it('signs the head once it moved N entries past the last checkpoint, and verify vouches for it', async () => {
    const org = await createOrg(t); // 2 entries: organization and admin key
    expect((await sign(org, T0, 5)).created).toEqual([2]); // no checkpoint yet: the head moved
    await mutate(org, 3);
    expect((await sign(org, at(60_000), 5)).created).toEqual([]); // 3 < 5 entries, 1 min < 1 h
    await mutate(org, 2);
    expect((await sign(org, at(120_000), 5)).created).toEqual([7]);
    expect((await sign(org, at(180_000), 5)).created).toEqual([]); // the head did not move
    expect((await checkpointsOf(org)).data.map((c) => c.seq)).toEqual([7, 2]);
    const v = await verifyOf(org);
    expect(v).toMatchObject({ valid: true, firstInvalid: null, entriesChecked: 7, headSeq: 7 });
    expect(v.checkpoints).toMatchObject({ checked: 1, lastGood: { seq: 7, keyId: signer.keyId }, bad: [], entriesAfterLastGood: 0 });
  });

  it('signs a head that moved at all once the interval passed since the last checkpoint', async () => {
    const org = await createOrg(t);
    expect((await sign(org, T0, 1000, 60_000)).created).toEqual([2]);
    await mutate(org, 1);
    expect((await sign(org, at(59_999), 1000, 60_000)).created).toEqual([]);
    expect((await sign(org, at(60_000), 1000, 60_000)).created).toEqual([3]);
  });

  it('a rewrite recomputed in SQL passes the chain check, but verify names the first entry after the last good checkpoint', async () => {
    const org = await createOrg(t);
    await mutate(org, 4);
    expect((await sign(org, T0, 4)).created).toEqual([6]);
    await mutate(org, 4);
    expect((await sign(org, at(1000), 4)).created).toEqual([10]);
    await mutate(org, 2); // 11, 12: not yet signed
    const seventh = await entryAt(org, 7);

    await rewriteFrom(org, 8);
    // The plain chain check cannot tell: every link and checksum is consistent again.
    const walk = await walkChain(t.database.db, org.orgId, { seq: 0, checksum: GENESIS }, { pageSize: 1000 });
    expect(walk).toMatchObject({ ok: true, checked: 12 });

    const v = await verifyOf(org);
    expect(v.valid).toBe(false);
    expect(v.entriesChecked).toBe(12);
    expect(v.firstInvalid).toMatchObject({ id: seventh.id, seq: 7 });
    expect(v.firstInvalid.reason).toMatch(/last good checkpoint \(seq 6\).*seq 10 no longer matches the chain/);
    expect(v.checkpoints.lastGood).toMatchObject({ seq: 6 });
    expect(v.checkpoints.bad).toEqual([expect.objectContaining({ seq: 10, reason: expect.stringMatching(/no longer matches/) })]);
    expect(v.checkpoints.entriesAfterLastGood).toBe(6);

    // The signer refuses to vouch for the rewritten head.
    const run = await sign(org, at(2000), 1);
    expect(run.created).toEqual([]);
    expect(run.refused).toEqual([expect.objectContaining({ seq: 12 })]);
  });

  it('reports a forged signature, and a checkpoint re-signed with a stored foreign key is not trusted', async () => {
    const org = await createOrg(t);
    await mutate(org, 2);
    expect((await sign(org, T0)).created).toEqual([4]);
    const first = await entryAt(org, 1);
    const forged = Buffer.alloc(64, 7).toString('base64');
    await t.database.db.execute(sql`update audit_checkpoints set signature = ${forged} where organization_id = ${org.orgId}`);
    const v = await verifyOf(org);
    expect(v.valid).toBe(false);
    expect(v.checkpoints.bad).toEqual([expect.objectContaining({ seq: 4, reason: expect.stringMatching(/signature that does not verify/) })]);
    expect(v.firstInvalid).toMatchObject({ id: first.id, seq: 1 }); // no good checkpoint left: nothing is vouched for

    // A writer who signs with a key of their own and stores its public key: sound, but not this server's.
    const own = ephemeralSigner();
    const [c] = (await checkpointsOf(org)).data;
    await t.database.db.execute(
      sql`update audit_checkpoints set key_id = ${own.keyId}, public_key = ${own.publicKeyPem}, signature = ${own.sign(String(c.message))} where organization_id = ${org.orgId}`,
    );
    const w = await verifyOf(org);
    expect(w.checkpoints).toMatchObject({ lastGood: null, bad: [], otherKeys: 1, entriesAfterLastGood: 4 });
  });

  it('verify and the offline check judge a checkpoint alike: a signed text other than the canonical one is refused by both', async () => {
    const org = await createOrg(t);
    await mutate(org, 1);
    expect((await sign(org, T0)).created).toEqual([3]);
    const [c] = (await checkpointsOf(org)).data;
    // The same fields, signed with the server's own key, but not as the RFC 8785 text the server signs.
    const loose = JSON.stringify({ signedAt: c.signedAt, seq: c.seq, checksum: c.checksum, organizationId: org.orgId }, null, 1);
    await t.database.db.execute(sql`update audit_checkpoints set message = ${loose}, signature = ${signer.sign(loose)} where organization_id = ${org.orgId}`);
    const reason = 'has a signed text that differs from its columns';
    expect((await verifyOf(org)).checkpoints.bad).toEqual([expect.objectContaining({ seq: 3, reason })]);
    const listed = (await checkpointsOf(org)).data as never;
    expect(verifyOffline({ checkpoints: listed, trustedKeyIds: [signer.keyId] }).problems).toEqual([`checkpoint at seq 3: ${reason}`]);
  });

  it('lists checkpoints newest first with the public key; the signature verifies offline with node:crypto', async () => {
    const org = await createOrg(t);
    await sign(org, T0);
    await mutate(org, 1);
    await sign(org, at(1000), 1);
    const page1 = await checkpointsOf(org, 'limit=1');
    expect(page1.meta).toEqual({ total: 2, limit: 1, offset: 0 });
    const c = page1.data[0];
    expect(c.seq).toBe(3);
    // What an auditor does with the listing alone:
    const publicKey = createPublicKey(String(c.publicKey));
    expect(verify(null, Buffer.from(String(c.message)), publicKey, Buffer.from(String(c.signature), 'base64'))).toBe(true);
    expect(c.message).toBe(JSON.stringify({ checksum: c.checksum, organizationId: org.orgId, seq: 3, signedAt: '2026-03-01T12:00:01.000Z' }));
    expect(c.keyId).toBe(createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex'));
    expect(c.checksum).toBe((await entryAt(org, 3)).checksum);
    expect((await checkpointsOf(org, 'limit=1&offset=1')).data[0].seq).toBe(2);

    // Same role and scope as reading the audit log.
    const viewer = await createKey(org, { scopes: ['agent:read'] });
    const res = await app.inject({ method: 'GET', url: '/api/v1/audit-logs/checkpoints', headers: { 'x-api-key': viewer.key } });
    expect(res.statusCode).toBe(403);
  });

  it('an auditor checks a JSON export against the checkpoint listing offline; a later rewrite is caught', async () => {
    const org = await createOrg(t);
    await mutate(org, 3);
    await sign(org, T0); // 5
    await mutate(org, 1); // 6: after the checkpoint
    const exported = async () => (await get(org, '/api/v1/audit-logs/export?format=json')).json().data;
    const checkpoints = (await checkpointsOf(org)).data as never;
    expect(verifyOffline({ checkpoints, entries: await exported(), trustedKeyIds: [signer.keyId] })).toEqual({
      ok: true,
      checkpointsVerified: 1,
      entriesChecked: 6,
      problems: [],
    });
    expect(verifyOffline({ checkpoints, trustedKeyIds: ['0'.repeat(64)] }).problems).toEqual([expect.stringMatching(/which you do not trust/)]);
    await rewriteFrom(org, 3);
    expect(verifyOffline({ checkpoints, entries: await exported() }).problems).toEqual(['checkpoint at seq 5: the log no longer matches it']);
  });

  it('verifies in pages: entries and checkpoints over more than one page', async () => {
    const org = await createOrg(t);
    await sign(org, T0); // 2
    for (const [i, seq] of [3, 5, 7, 9].entries()) {
      await mutate(org, 2);
      expect((await sign(org, at((i + 1) * 1000), 2)).created).toEqual([seq + 1]);
    }
    const good = await verifyOf(org, pagedApp);
    expect(good).toMatchObject({ valid: true, entriesChecked: 10, headSeq: 10 });
    expect(good.checkpoints).toMatchObject({ checked: 1, lastGood: { seq: 10 } });

    await rewriteFrom(org, 5); // checkpoints 10, 8, 6 (pages 1 and 2) no longer match; 4 does
    const fifth = await entryAt(org, 5);
    const v = await verifyOf(org, pagedApp);
    expect(v).toMatchObject({ valid: false, entriesChecked: 10, firstInvalid: { id: fifth.id, seq: 5 } });
    expect(v.checkpoints.checked).toBe(4);
    expect(v.checkpoints.lastGood).toMatchObject({ seq: 4 });
    expect(v.checkpoints.bad.map((b: { seq: number }) => b.seq)).toEqual([10, 8, 6]);
  });
});

describe('audit signing key', () => {
  const quiet = () => {
    const lines: string[] = [];
    return { lines, log: { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(`WARN ${m}`) } };
  };

  it('is generated on first start into DATA_DIR (owner-only), then loaded; the log names the path, never the key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agov-key-'));
    const first = quiet();
    const a = loadAuditSigner({ DATA_DIR: dir, production: false, postgres: false }, first.log);
    const path = join(dir, KEY_FILE_NAME);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(first.lines).toEqual([expect.stringContaining(`generated at ${path}`)]);
    expect(first.lines.join('\n')).not.toMatch(/PRIVATE KEY|MC4CAQAw/);
    const second = quiet();
    const b = loadAuditSigner({ DATA_DIR: dir, production: true, postgres: false }, second.log);
    expect(b.keyId).toBe(a.keyId);
    expect(second.lines.some((l) => l.startsWith('WARN ') && l.includes('AUDIT_SIGNING_KEY is not set'))).toBe(true);
  });

  it('AUDIT_SIGNING_KEY takes a PKCS#8 PEM or a path to one; anything else is refused at start', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const dir = mkdtempSync(join(tmpdir(), 'agov-key-'));
    const file = join(dir, 'k.pem');
    writeFileSync(file, pem);
    const opts = { DATA_DIR: dir, production: true, postgres: true };
    const fromPem = loadAuditSigner({ ...opts, AUDIT_SIGNING_KEY: pem }, quiet().log);
    expect(loadAuditSigner({ ...opts, AUDIT_SIGNING_KEY: file }, quiet().log).keyId).toBe(fromPem.keyId);
    expect(() => loadAuditSigner({ ...opts, AUDIT_SIGNING_KEY: join(dir, 'missing.pem') }, quiet().log)).toThrow(/neither a PEM key nor an existing file/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(() => loadAuditSigner({ ...opts, AUDIT_SIGNING_KEY: rsa }, quiet().log)).toThrow(/Ed25519/);
    expect(readFileSync(file, 'utf8')).toBe(pem);
  });
});
