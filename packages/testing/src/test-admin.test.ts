import type { Broker } from '@ricochet/broker';
import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { TestAdmin } from './test-admin.js';
import { startTestBroker } from './test-broker.js';

/**
 * A test broker's admin API whose first `unavailable` requests are answered `503
 * BROKER_UNAVAILABLE` by the broker itself: each is sent for one queue of a cluster
 * (`ricochet-queue`), which a broker in no cluster refuses so; the retry's waits pass at once.
 */
async function adminUnavailableFirst(unavailable: number) {
  const broker = await startTestBroker();
  const real = broker.broker.app;
  const requests: number[] = [];
  // What TestAdmin calls of the app: `inject` with the options it builds, passed on as they are.
  const app = {
    inject: async (options: {
      readonly method: 'GET' | 'PUT' | 'POST';
      readonly url: string;
      readonly headers?: Record<string, string>;
    }) => {
      const refused = requests.length < unavailable;
      const headers = { ...options.headers, ...(refused ? { 'ricochet-queue': '0' } : {}) };
      const response = await real.inject({ ...options, headers });
      requests.push(response.statusCode);
      return response;
    },
  };
  const slept: number[] = [];
  let nowMs = 0;
  const admin = new TestAdmin({ app } as unknown as Pick<Broker, 'app'>, {
    retry: {
      sleep: async (delayMs) => {
        slept.push(delayMs);
        nowMs += delayMs;
      },
      clock: { now: () => nowMs },
      random: () => 0.5,
    },
  });
  return { broker, admin, requests, slept };
}

describe('TestAdmin: a 503 is retried', () => {
  it('makes a PUT again after a backoff until the broker takes it', async () => {
    const { broker, admin, requests, slept } = await adminUnavailableFirst(2);
    await using _broker = broker;
    expect(await admin.putGroup('billing', { maxRetries: 2 })).toMatchObject({
      name: 'billing',
      config: { maxRetries: 2 },
    });
    expect(requests).toEqual([503, 503, 200]);
    expect(slept).toEqual([250, 500]);
  });

  it('does not make a redrive again, and throws the 503 with its code', async () => {
    const { broker, admin, requests, slept } = await adminUnavailableFirst(1);
    await using _broker = broker;
    const failure = await admin.redrive('billing').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(BrokerError);
    expect(failure).toMatchObject({ code: 503 });
    expect(requests).toEqual([503]);
    expect(slept).toEqual([]);
  });
});
