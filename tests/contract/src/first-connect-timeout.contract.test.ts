import { Producer } from '@ricochet/producer';
import type { RicochetError } from '@ricochet/protocol';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { SimpleConsumer } from '@ricochet/simple-consumer';
import { describe, expect, it } from 'vitest';
import { FAST_BACKOFF } from './support/clients.js';
import { closedPort } from './support/closed-port.js';

/** The error `start()` rejects with. */
async function startError(client: { start(): Promise<void> }): Promise<RicochetError> {
  return client.start().then(
    () => {
      throw new Error('start() resolved with no broker there');
    },
    (error: RicochetError) => error,
  );
}

/** Long enough for an attempt to be refused first on a loaded machine (a closed port refuses at once). */
const CONNECT_TIMEOUT_MS = 500;

describe('a client whose broker is not there fails start() after connectTimeoutMs, naming the endpoint', () => {
  const clients = {
    producer: (endpoint: string) =>
      new Producer({ endpoint, connectTimeoutMs: CONNECT_TIMEOUT_MS, reconnectBackoff: FAST_BACKOFF }),
    'push consumer': (endpoint: string) =>
      new PushConsumer({
        endpoint,
        connectTimeoutMs: CONNECT_TIMEOUT_MS,
        reconnectBackoff: FAST_BACKOFF,
        group: 'billing',
        subscriptions: { orders: '*' },
        listener: () => ConsumeResult.SUCCESS,
      }),
    'simple consumer': (endpoint: string) =>
      new SimpleConsumer({
        endpoint,
        connectTimeoutMs: CONNECT_TIMEOUT_MS,
        reconnectBackoff: FAST_BACKOFF,
        group: 'billing',
        subscriptions: { orders: '*' },
      }),
  };

  it.each(Object.entries(clients))('%s', async (_name, create) => {
    const endpoint = `ws://127.0.0.1:${await closedPort()}`;
    await using client = create(endpoint);
    const error = await startError(client);
    expect(error).toMatchObject({ name: 'ClientError', code: 'CONNECT_TIMEOUT', retryable: true });
    expect(error.message).toContain(`could not connect to ${endpoint} within ${CONNECT_TIMEOUT_MS} ms`);
    expect(error.message).toContain('ECONNREFUSED');
  });
});
