import { BrokerError } from '@ricochet/protocol';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { registerBrokerErrorReplies } from './http-error.js';

describe('registerBrokerErrorReplies', () => {
  it('answers a BrokerError a route throws with its catalogue status and code, and anything else as a 500', async () => {
    const app = Fastify();
    registerBrokerErrorReplies(app);
    app.get('/between-owners', async () => {
      throw BrokerError.of('BROKER_UNAVAILABLE', 'queue 0 is between owners; try again');
    });
    app.get('/bug', async () => {
      throw new Error('a bug');
    });
    const unavailable = await app.inject({ method: 'GET', url: '/between-owners' });
    expect(unavailable.statusCode).toBe(503);
    expect(unavailable.json()).toMatchObject({
      error: { code: 503, name: 'BROKER_UNAVAILABLE', message: 'queue 0 is between owners; try again' },
    });
    expect((await app.inject({ method: 'GET', url: '/bug' })).statusCode).toBe(500);
    await app.close();
  });
});
