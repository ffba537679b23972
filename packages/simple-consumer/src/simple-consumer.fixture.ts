import { FAST_BACKOFF, type FakeBrokerPerTest, fakeBrokerPerTest } from '@ricochet/client-testkit';
import { afterEach, vi } from 'vitest';
import { SimpleConsumer } from './simple-consumer.js';
import type { SimpleConsumerOptions } from './simple-consumer-options.js';

/**
 * The set-up every simple consumer test file shares: a fake broker per test, and consumers of
 * group `billing` on `orders` that answer at once and reconnect fast, closed after each test.
 */
export function simpleConsumersPerTest(): {
  readonly brokers: FakeBrokerPerTest<SimpleConsumer>;
  readonly createConsumer: (
    endpoint: SimpleConsumerOptions['endpoint'],
    options?: Partial<SimpleConsumerOptions>,
  ) => SimpleConsumer;
} {
  const brokers = fakeBrokerPerTest((consumer: SimpleConsumer) => consumer.close({ timeoutMs: 0 }));
  afterEach(() => {
    vi.restoreAllMocks();
  });
  const createConsumer = (
    endpoint: SimpleConsumerOptions['endpoint'],
    options: Partial<SimpleConsumerOptions> = {},
  ) =>
    brokers.track(
      new SimpleConsumer({
        endpoint,
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
        reconnectBackoff: FAST_BACKOFF,
        onProtocolError: () => {},
        ...options,
      }),
    );
  return { brokers, createConsumer };
}
