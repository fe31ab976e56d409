/** Response envelopes of the specification, and their zod schemas for the OpenAPI document. */
import type { FastifyReply } from 'fastify';
import type { FastifyRouteSchemaDef } from 'fastify/types/schema.js';
import { serializerCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';

/** `{ data }` for a single item. */
export const one = <T>(data: T) => ({ data });

/** `{ data, meta: { total, limit, offset } }` for a page of a list. */
export const page = <T>(data: T[], total: number, limit: number, offset: number) => ({
  data,
  meta: { total, limit, offset },
});

export const dataSchema = <T extends z.ZodType>(item: T) => z.object({ data: item });

/**
 * Route-level serializer for the hot path (POST /policies/enforce): its 200 answer, built field by
 * field by its service, is written with JSON.stringify instead of being parsed by its zod schema
 * first (about a tenth of the route's CPU); the shape is held by tests instead (an exact-keys
 * parse in test/policies-enforce.test.ts). Every other status keeps the app's zod serializer.
 */
export const plainOkSerializer = <S>(route: FastifyRouteSchemaDef<S>) =>
  // The route's schema is zod's (the app's type provider); Fastify types the option by the route's literal schema.
  route.httpStatus === '200' ? (data: unknown) => JSON.stringify(data) : serializerCompiler(route as unknown as Parameters<typeof serializerCompiler>[0]);

export const pageSchema = <T extends z.ZodType>(item: T) =>
  z.object({
    data: z.array(item),
    meta: z.object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
  });

export const messageSchema = z.object({ message: z.string() });

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      fields: z.record(z.string(), z.string()).optional(),
    }),
  })
  .meta({ id: 'Error' });

/**
 * The error responses of a route. The OpenAPI document derives 400/401/403/413/415/422/429/500 and
 * the 404 of a path id from the route itself (src/http/openapi.ts), whatever is listed here; a route
 * adds `conflictResponse` where it can answer 409 and `notFoundResponse` where it looks up something
 * named outside its path.
 */
export const errorResponses = {
  400: errorSchema,
  401: errorSchema,
  403: errorSchema,
  413: errorSchema,
  422: errorSchema,
  429: errorSchema,
} as const;

/** 409 CONFLICT or INVALID_TRANSITION: for routes whose change can collide with current state. */
export const conflictResponse = { 409: errorSchema } as const;

/** 404 for a lookup of something not named by the path (a path id's 404 is derived). */
export const notFoundResponse = { 404: errorSchema } as const;

/** A timestamp in a response: an ISO 8601 date-time (documented as `format: date-time`). */
export const isoDateTimeOut = () => z.iso.datetime({ offset: true });

/** The 200 of a streamed export: `{ data: [item] }` as JSON, or CSV with a header row. */
export const exportResponse = <T extends z.ZodType>(item: T) => ({
  200: {
    description: 'The matching rows, streamed: JSON `{ data: [...] }` (format=json) or CSV with a header row (format=csv; objects as JSON text).',
    content: {
      'application/json': { schema: z.object({ data: z.array(item) }) },
      'text/csv': { schema: z.string() },
    },
  },
});

/** Sends an already-serialized JSON body as is (Fastify does not serialize a string again). */
export function sendJsonText(reply: FastifyReply, text: string) {
  return reply.type('application/json; charset=utf-8').send(text as never);
}
