import type { FastifyInstance } from 'fastify';

export async function savedFilterRoutes(_app: FastifyInstance) {}
