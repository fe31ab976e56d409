/** Deterministic trace data shared by the ingest benchmark and its raw-INSERT baseline. */
const WORDS = ['refund', 'order', 'invoice', 'shipping', 'password', 'reset', 'billing', 'account', 'delivery', 'complaint', 'upgrade', 'cancel'];
const MODELS = ['gpt-4o-mini', 'gpt-4o', 'claude-3-5-haiku', 'gemini-2.0-flash'];
const STATUSES = ['success', 'success', 'success', 'success', 'success', 'success', 'success', 'error', 'timeout', 'success'];

/** The i-th trace of a run, as an ingest item. */
export function item(prefix: string, i: number, agentId: string) {
  return {
    traceId: `${prefix}-${i}`,
    agentId,
    timestamp: new Date(Date.UTC(2026, 10, 1) + i * 1000).toISOString(),
    durationMs: 50 + (i % 950),
    status: STATUSES[i % STATUSES.length],
    modelName: MODELS[i % MODELS.length],
    promptTokens: 200 + (i % 800),
    completionTokens: 50 + (i % 300),
    spanType: 'llm_call',
    spanName: `answer ${WORDS[i % WORDS.length]}`,
    sessionId: `s-${Math.floor(i / 10)}`,
    input: { question: `customer asks about ${WORDS[(i * 7) % WORDS.length]} and ${WORDS[(i * 3) % WORDS.length]}` },
    output: { answer: `resolved ${WORDS[(i * 5) % WORDS.length]}` },
  };
}

/** Batches of ingest items. */
export function itemBatches(prefix: string, batches: number, size: number, agentId: string) {
  return Array.from({ length: batches }, (_, b) => Array.from({ length: size }, (_, j) => item(prefix, b * size + j, agentId)));
}

/** The same traces as table rows for a direct INSERT (what ingest writes, minus its logic). */
export function rawTraceRows(orgId: string, agentUuid: string, prefix: string, batches: number, size: number) {
  return itemBatches(prefix, batches, size, '').map((batch) =>
    batch.map((t) => ({
      organizationId: orgId,
      agentId: agentUuid,
      traceId: t.traceId,
      timestamp: new Date(t.timestamp),
      durationMs: t.durationMs,
      status: t.status,
      modelName: t.modelName,
      promptTokens: t.promptTokens,
      completionTokens: t.completionTokens,
      totalTokens: t.promptTokens + t.completionTokens,
      costUsd: 0.001,
      environment: 'production',
      spanType: t.spanType,
      spanName: t.spanName,
      sessionId: t.sessionId,
      input: t.input,
      output: t.output,
    })),
  );
}
