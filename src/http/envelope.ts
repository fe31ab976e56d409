/** Response envelopes of the specification, and their zod schemas for the OpenAPI document. */
import type { FastifyReply } from 'fastify';
import { z } from 'zod';

/** `{ data }` for a single item. */
export const one = <T>(data: T) => ({ data });

/** `{ data, meta: { total, limit, offset } }` for a page of a list. */
export const page = <T>(data: T[], total: number, limit: number, offset: number) => ({
  data,
  meta: { total, limit, offset },
});

export const dataSchema = <T extends z.ZodType>(item: T) => z.object({ data: item });

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

/** The error responses every authenticated route may answer with. */
export const errorResponses = {
  400: errorSchema,
  401: errorSchema,
  403: errorSchema,
  404: errorSchema,
  409: errorSchema,
  413: errorSchema,
  422: errorSchema,
  429: errorSchema,
} as const;

/** Sends an already-serialized JSON body as is (Fastify does not serialize a string again). */
export function sendJsonText(reply: FastifyReply, text: string) {
  return reply.type('application/json; charset=utf-8').send(text as never);
}
