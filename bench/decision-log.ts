/**
 * The decision log's cost (docs/decisions.md, "Decision log and policy stats"):
 * - record(): ns per call, the enforce path's share (its counts added, a deny's row built, its events held);
 * - flush: rows/s of DecisionLog.flush() (rows, counter upsert, one transaction) against a raw
 *   multi-row INSERT of the same rows into a table of the same shape, in the same run, alternated.
 * PGlite in memory, or DATABASE_URL. Usage: node --import tsx bench/decision-log.ts [rows per flush] [rounds].
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { openDatabase } from '../src/db/client.js';
import { DecisionLog, type DecisionRecordInput } from '../src/domains/policy-decisions/index.js';

const BATCH = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 10);
const POLICIES = 20;

const database = await openDatabase({ url: process.env.DATABASE_URL, dataDir: null, poolSize: 4 });
await database.migrate();
const db = database.db;
const org = randomUUID();
const agents = Array.from({ length: 10 }, () => randomUUID());
const policies = Array.from({ length: POLICIES }, () => randomUUID());
const t0 = Date.now();

/** A decision: deny with one violation and one warning over POLICIES evaluated policies (or allow). */
function decision(i: number, deny: boolean): DecisionRecordInput {
  const p = policies[i % POLICIES];
  const v = { policyId: p, policyName: 'No cards', policyType: 'data_restriction', code: 'pii.credit_card', message: 'Credit card number in input', enforcementMode: 'block' as const, evidence: { path: 'input.text', start: 120, end: 139, score: 1 } };
  return {
    organizationId: org, decisionId: randomUUID(), agentId: agents[i % agents.length], environment: 'production',
    action: { type: 'tool_call', name: 'send_email', resource: 'smtp://mail.example.com' },
    decision: deny ? 'deny' : 'allow', violations: deny ? [v] : [], warnings: deny ? [{ ...v, policyId: policies[(i + 1) % POLICIES], enforcementMode: 'warn' }] : [],
    evaluatedPolicyIds: policies, evaluationMs: 0.31, accessGrantId: null, sessionId: 'sess-1', traceId: `trace-${i}`, userId: null, events: [],
    at: new Date(t0 + i),
  };
}

// 1. record(): ns/op, in rounds of 10,000 calls (what one flush interval holds at 10,000 decisions/s)
//    on a fresh log each round (new counter keys, as each flush interval starts), then on a log whose
//    flushes (started at the default bound) run on a database stub: the CPU of the buffer alone.
const N = 1_000_000;
const inputs = Array.from({ length: 10_000 }, (_, i) => decision(i, i % 10 === 0));
{
  let freshNs = 0;
  for (let round = -10; round < N / inputs.length; round++) {
    const log = new DecisionLog({ db, maxBuffered: inputs.length + 1 });
    const s = process.hrtime.bigint();
    for (const d of inputs) log.record(d);
    if (round >= 0) freshNs += Number(process.hrtime.bigint() - s); // the first rounds warm up
  }
  const stub = new Proxy(db, { get: (t, k, r) => (k === 'transaction' ? async () => undefined : Reflect.get(t, k, r)) });
  const bounded = new DecisionLog({ db: stub, maxBuffered: 10_000 });
  const s2 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) bounded.record(inputs[i % inputs.length]);
  const boundedNs = Number(process.hrtime.bigint() - s2) / N;
  console.log(`${database.kind}: record() ${(freshNs / N).toFixed(0)} ns/op on a fresh log, ${boundedNs.toFixed(0)} ns/op with flushes at the bound (10% deny, ${POLICIES} policies evaluated each)`);
}

// 3. flush vs raw multi-row INSERT of the same rows, alternated, BATCH rows (all deny) per round.
await db.execute(sql`create table bench_raw_decisions (like policy_decisions including all)`);
const COLS = sql.raw('organization_id, id, agent_id, action_type, action_name, action_resource, environment, decision, violations, warnings, policy_ids, evaluated_policies, evaluation_ms, access_grant_id, session_id, trace_id, user_id, created_at');
let flushMs = 0;
let rawMs = 0;
for (let round = 0; round < ROUNDS; round++) {
  const batch = Array.from({ length: BATCH }, (_, i) => decision(round * BATCH + i, true));
  const log = new DecisionLog({ db, maxBuffered: BATCH + 1 });
  for (const d of batch) log.record(d);
  const a = performance.now();
  await log.flush();
  flushMs += performance.now() - a;
  // The baseline: the rows alone, one parameterized multi-row INSERT (chunks under the 65,535-parameter limit), one transaction.
  const b = performance.now();
  await db.transaction(async (tx) => {
    for (let i = 0; i < batch.length; i += 3000) {
      const values = batch.slice(i, i + 3000).map((d) => {
        const ids = `{${d.violations.map((v) => v.policyId).join(',')}}`;
        return sql`(${d.organizationId}, ${randomUUID()}, ${d.agentId}, ${d.action.type}, ${d.action.name}, ${d.action.resource}, ${d.environment}, ${d.decision}, ${JSON.stringify(d.violations)}::jsonb, ${JSON.stringify(d.warnings)}::jsonb, ${ids}::uuid[], ${d.evaluatedPolicyIds.length}, ${d.evaluationMs}, ${d.accessGrantId}, ${d.sessionId}, ${d.traceId}, ${d.userId}, ${d.at.toISOString()}::timestamptz)`;
      });
      await tx.execute(sql`insert into bench_raw_decisions (${COLS}) values ${sql.join(values, sql`, `)}`);
    }
  });
  rawMs += performance.now() - b;
}
const rate = (ms: number) => Math.round(((BATCH * ROUNDS) / ms) * 1000);
console.log(`  flush ${rate(flushMs)} rows/s (rows + ${POLICIES * 10}-key counter upsert, one transaction)   raw multi-row INSERT ${rate(rawMs)} rows/s   ratio ${(rawMs / flushMs).toFixed(2)}   (${ROUNDS} rounds of ${BATCH})`);
await db.execute(sql`drop table bench_raw_decisions`);
await db.execute(sql`delete from policy_decisions where organization_id = ${org}`);
await db.execute(sql`delete from policy_decision_counts where organization_id = ${org}`);
await database.close();
