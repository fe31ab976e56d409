import { z } from 'zod';
import { isoDateTimeOut } from '../../http/envelope.js';
import { environmentEnum, isoDateTime, jsonObject, pagination, str } from '../../http/validation.js';

export const TRACE_STATUSES = ['success', 'error', 'timeout', 'policy_blocked', 'limit_exceeded'] as const;
export const SPAN_TYPES = ['root', 'agent', 'llm_call', 'tool_call', 'retrieval', 'middleware', 'custom'] as const;

const INT32 = 2_147_483_647;
const count = z.number().int().min(0).max(INT32);
/** Timestamps more than this far ahead of the server clock are refused (clock skew allowance). */
export const MAX_FUTURE_MS = 24 * 3_600_000;
const traceTimestamp = isoDateTime()
  .refine((s) => Date.parse(s) <= Date.now() + MAX_FUTURE_MS, 'must not be more than 24 hours in the future')
  .refine((s) => Date.parse(s) >= Date.UTC(2000, 0, 1), 'must not be before 2000-01-01');
// Trace bodies are larger than settings objects: deeper and bigger, still bounded.
const payload = () => jsonObject(64, 200_000);

/** The fields of one item of POST /traces/ingest. Fields absent on an update keep their stored values. */
const ingestItemFields = {
  traceId: str(1, 255),
  agentId: str(1, 255).optional().describe('External agent id (or use agentUuid, or an agent-scoped key)'),
  agentUuid: z.uuid().optional(),
  parentTraceId: str(1, 255).nullable().optional(),
  timestamp: traceTimestamp.optional().describe('Defaults to the time of ingestion'),
  durationMs: count.nullable().optional(),
  status: z.enum(TRACE_STATUSES).optional().describe('Defaults to success on first ingestion'),
  input: payload().nullable().optional(),
  output: payload().nullable().optional(),
  errorMessage: str(0, 10_000).nullable().optional(),
  errorType: str(0, 255).nullable().optional(),
  modelName: str(0, 255).nullable().optional(),
  promptTokens: count.nullable().optional(),
  completionTokens: count.nullable().optional(),
  totalTokens: count.nullable().optional(),
  costUsd: z.number().min(0).max(1e9).nullable().optional().describe('Estimated from modelName and tokens when absent'),
  environment: environmentEnum.optional().describe("Defaults to the agent's environment"),
  version: str(0, 100).nullable().optional(),
  tags: z.array(str(1, 100)).max(50).nullable().optional(),
  metadata: jsonObject().nullable().optional(),
  userId: str(0, 255).nullable().optional(),
  sessionId: str(0, 255).nullable().optional(),
  spanType: z.enum(SPAN_TYPES).optional().describe('Defaults to custom'),
  spanName: str(0, 255).nullable().optional(),
};

/**
 * One ingest item as documented: unknown keys are tolerated, since SDKs add fields
 * (docs/decisions.md "Strict inputs"); the OpenAPI document says so (`additionalProperties: {}`).
 */
export const ingestItemDocumented = z.looseObject(ingestItemFields).meta({ id: 'IngestTraceItem' });

/** How an ingest item is parsed: the documented fields; unknown keys are dropped, never stored. */
export const ingestItemSchema = z.object(ingestItemFields);

export type IngestItem = z.infer<typeof ingestItemSchema>;

/**
 * The envelope is validated as a whole (422 when `traces` is missing, empty or over 100); each item
 * is validated on its own so that one bad item fails alone (partial success).
 */
export const ingestInput = z
  .object({
    traces: z
      .array(z.unknown())
      .min(1)
      .max(100)
      .meta({ items: { $ref: '#/components/schemas/IngestTraceItem' } }),
  })
  .meta({ id: 'IngestTracesInput' });

export const ingestResultSchema = z
  .object({
    accepted: z.number().int(),
    failed: z.number().int(),
    traceIds: z.array(z.string()),
    errors: z.array(z.object({ index: z.number().int(), traceId: z.string().nullable(), error: z.string() })).optional(),
  })
  .meta({ id: 'IngestTracesResult' });

export const traceSchema = z
  .object({
    id: z.uuid(),
    traceId: z.string(),
    agentId: z.uuid(),
    parentTraceId: z.string().nullable(),
    timestamp: isoDateTimeOut(),
    durationMs: z.number().int().nullable(),
    status: z.enum(TRACE_STATUSES),
    input: z.record(z.string(), z.unknown()).nullable(),
    output: z.record(z.string(), z.unknown()).nullable(),
    errorMessage: z.string().nullable(),
    errorType: z.string().nullable(),
    modelName: z.string().nullable(),
    promptTokens: z.number().int().nullable(),
    completionTokens: z.number().int().nullable(),
    totalTokens: z.number().int().nullable(),
    costUsd: z.number().nullable(),
    environment: environmentEnum,
    version: z.string().nullable(),
    tags: z.array(z.string()).nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    userId: z.string().nullable(),
    sessionId: z.string().nullable(),
    spanType: z.enum(SPAN_TYPES),
    spanName: z.string().nullable(),
    flagged: z.boolean(),
    flagReason: z.string().nullable(),
    createdAt: isoDateTimeOut(),
  })
  .meta({ id: 'Trace' });

const ts = isoDateTime();

export const traceFilters = {
  agentId: z.uuid().optional(),
  status: z.enum(TRACE_STATUSES).optional(),
  environment: environmentEnum.optional(),
  sessionId: str(1, 255).optional(),
  startTime: ts.optional(),
  endTime: ts.optional(),
};

export const listTracesQuery = z.object({ ...pagination, ...traceFilters, search: str(1, 500).optional() });
export type ListTracesQuery = z.infer<typeof listTracesQuery>;

export const statsQuery = z.object({ hours: z.coerce.number().int().min(1).max(8760).default(24) });

/** A date (YYYY-MM-DD, the whole day) or a date-time. */
const dateOrTime = z.union([z.iso.date().refine((d) => d >= '0001-01-01', 'must not be before 0001-01-01'), isoDateTime()]);
export const exportQuery = z.object({
  format: z.enum(['json', 'csv']).default('json'),
  startDate: dateOrTime.optional(),
  endDate: dateOrTime.optional(),
  agentId: z.uuid().optional(),
  status: z.enum(TRACE_STATUSES).optional(),
  environment: environmentEnum.optional(),
});

export const similarQuery = z.object({ limit: z.coerce.number().int().min(1).max(50).default(10) });
export const flagInput = z
  .object({ flagged: z.boolean().default(true), reason: str(0, 1000).optional() })
  .meta({ id: 'FlagTraceInput' });

export const traceWithRelatedSchema = traceSchema.extend({ relatedTraces: z.array(traceSchema) }).meta({ id: 'TraceWithRelated' });

export const traceTreeNodeSchema: z.ZodType<unknown> = traceSchema
  .extend({
    get children() {
      return z.array(traceTreeNodeSchema);
    },
  })
  .meta({ id: 'TraceTreeNode' });

export const similarTraceSchema = traceSchema.extend({ similarityScore: z.number() }).meta({ id: 'SimilarTrace' });

const bucketSchema = z.object({ bucket: isoDateTimeOut(), total: z.number().int(), errors: z.number().int(), costUsd: z.number() });
export const traceStatsSchema = z
  .object({
    hours: z.number().int(),
    total: z.number().int(),
    byStatus: z.record(z.string(), z.number().int()),
    errorRate: z.number(),
    avgDurationMs: z.number(),
    p50DurationMs: z.number(),
    p95DurationMs: z.number(),
    p99DurationMs: z.number(),
    totalCostUsd: z.number(),
    totalTokens: z.number(),
    byAgent: z.array(z.object({ agentId: z.uuid(), agentName: z.string(), total: z.number().int(), errors: z.number().int(), costUsd: z.number() })),
    byModel: z.array(z.object({ modelName: z.string(), total: z.number().int(), costUsd: z.number(), totalTokens: z.number() })),
    timeseries: z.array(bucketSchema),
  })
  .meta({ id: 'TraceStats' });
