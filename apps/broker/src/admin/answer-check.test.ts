import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { registerAnswerCheck } from './answer-check.js';

async function appAnswering(answer: unknown, statusCode = 200) {
  const app = Fastify();
  registerAnswerCheck(app);
  app.get('/v1/store', async (_request, reply) => reply.code(statusCode).send(answer));
  app.get('/v1/unchecked', async () => ({ anything: 'goes' }));
  await app.ready();
  return app;
}

describe('registerAnswerCheck', () => {
  it('sends an answer that matches its schema as it is, unknown fields included', async () => {
    const app = await appAnswering({ storedBytes: 42, extra: 'kept' });
    const response = await app.inject({ method: 'GET', url: '/v1/store' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ storedBytes: 42, extra: 'kept' });
    await app.close();
  });

  it('fails the request with a 500 naming the field when the answer does not match', async () => {
    const app = await appAnswering({ storedBytes: 'many' });
    const response = await app.inject({ method: 'GET', url: '/v1/store' });
    expect(response.statusCode).toBe(500);
    expect(response.json().message).toContain('GET /v1/store does not match its schema: storedBytes');
    await app.close();
  });

  it('leaves error answers and routes without a schema alone', async () => {
    const app = await appAnswering({ error: { code: 404, name: 'NOT_FOUND', message: 'no' } }, 404);
    expect((await app.inject({ method: 'GET', url: '/v1/store' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/v1/unchecked' })).json()).toEqual({ anything: 'goes' });
    await app.close();
  });
});
