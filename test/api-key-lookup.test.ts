/** The key lookup through api_key_hashes (docs/decisions.md, "Data model: keys by organization"). */
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { apiKeyHashes, apiKeys } from '../src/db/schema/index.js';
import { describe, expect, it } from './fixture.js';
import { createKey, type TestApp, type TestOrg } from './helpers.js';

const hashRowsOf = (t: TestApp, keyId: string) => t.database.db.select().from(apiKeyHashes).where(eq(apiKeyHashes.apiKeyId, keyId));
const statusWith = async (org: TestOrg, key: string) => (await org.req({ key, method: 'GET', url: '/api/v1/agents' })).statusCode;

describe('key lookup through api_key_hashes', () => {
  it('a new key authenticates and has its one hash row', async ({ app, org }) => {
    const k = await createKey(org, {});
    expect(await statusWith(org, k.key)).toBe(200);
    const rows = await hashRowsOf(app, k.id);
    expect(rows).toHaveLength(1);
    expect(rows[0].organizationId).toBe(org.orgId);
    // The organization's first admin key (organization creation) has its row too.
    const [admin] = await app.database.db.select({ n: apiKeyHashes.keyHash }).from(apiKeyHashes).where(eq(apiKeyHashes.organizationId, org.orgId));
    expect(admin).toBeDefined();
  });

  it('rotation: the old string is 401, the new one works, and the key has exactly one hash row', async ({ app, org }) => {
    const k = await createKey(org, {});
    expect(await statusWith(org, k.key)).toBe(200);
    const res = await org.req({ method: 'POST', url: `/api/v1/api-keys/${k.id}/rotate` });
    expect(res.statusCode).toBe(200);
    const fresh = res.json().data.key as string;
    expect(await statusWith(org, k.key)).toBe(401);
    expect(await statusWith(org, fresh)).toBe(200);
    const rows = await hashRowsOf(app, k.id);
    expect(rows).toHaveLength(1);
    const [row] = await app.database.db.select().from(apiKeys).where(eq(apiKeys.id, k.id));
    expect(rows[0].keyHash).toBe(row.keyHash);
  });

  it('deletion: 401, and no hash row is left', async ({ app, org }) => {
    const k = await createKey(org, {});
    expect(await statusWith(org, k.key)).toBe(200);
    expect((await org.req({ method: 'DELETE', url: `/api/v1/api-keys/${k.id}` })).statusCode).toBe(204);
    expect(await statusWith(org, k.key)).toBe(401);
    expect(await hashRowsOf(app, k.id)).toEqual([]);
  });

  it("an agent key deleted under its agent: 401, and no hash row is left", async ({ app, org }) => {
    const agent = await org.req({
      method: 'POST', url: '/api/v1/agents',
      payload: { agentId: `bot-${randomUUID()}`, name: 'bot', type: 'chatbot', platform: 'openai', environment: 'production' },
    });
    const agentId = agent.json().data.id as string;
    const res = await org.req({ method: 'POST', url: `/api/v1/agents/${agentId}/keys`, payload: { name: 'sdk' } });
    const k = res.json().data as { id: string; key: string };
    expect(await hashRowsOf(app, k.id)).toHaveLength(1);
    expect((await org.req({ key: k.key, method: 'GET', url: `/api/v1/agents/${agentId}` })).statusCode).toBe(200);
    expect((await org.req({ method: 'DELETE', url: `/api/v1/agents/${agentId}/keys/${k.id}` })).statusCode).toBe(204);
    expect((await org.req({ key: k.key, method: 'GET', url: `/api/v1/agents/${agentId}` })).statusCode).toBe(401);
    expect(await hashRowsOf(app, k.id)).toEqual([]);
  });

  it('a key row without its hash row does not authenticate (the lookup reads the table)', async ({ app, org }) => {
    const k = await createKey(org, {});
    // Not used before: nothing of it is in the auth cache.
    await app.database.db.delete(apiKeyHashes).where(eq(apiKeyHashes.apiKeyId, k.id));
    expect(await statusWith(org, k.key)).toBe(401);
  });

  it('a hash row whose key is gone (a cascade the service did not see) finds nothing', async ({ app, org }) => {
    const k = await createKey(org, {});
    await app.database.db.delete(apiKeys).where(eq(apiKeys.id, k.id));
    expect(await hashRowsOf(app, k.id)).toHaveLength(1);
    expect(await statusWith(org, k.key)).toBe(401);
  });
});
