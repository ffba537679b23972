import { FAST_BACKOFF, type FakeBrokerPerTest, fakeBrokerPerTest } from '@ricochet/client-testkit';
import type { MessageListener } from './listener-pool.js';
import { PushConsumer } from './push-consumer.js';
import type { PushConsumerOptions } from './push-consumer-options.js';

/**
 * The set-up every push consumer test file shares: a fake broker per test, and consumers of group
 * `billing` on `orders` that reconnect fast and swallow listener and protocol errors, closed after
 * each test.
 */
export function pushConsumersPerTest(): {
  readonly brokers: FakeBrokerPerTest<PushConsumer>;
  readonly createConsumer: (
    endpoint: PushConsumerOptions['endpoint'],
    options: Partial<PushConsumerOptions> & { listener: MessageListener },
  ) => PushConsumer;
} {
  const brokers = fakeBrokerPerTest((consumer: PushConsumer) => consumer.close());
  const createConsumer = (
    endpoint: PushConsumerOptions['endpoint'],
    options: Partial<PushConsumerOptions> & { listener: MessageListener },
  ) =>
    brokers.track(
      new PushConsumer({
        endpoint,
        group: 'billing',
        subscriptions: { orders: '*' },
        reconnectBackoff: FAST_BACKOFF,
        closeTimeoutMs: 1_000,
        onListenerError: () => {},
        onProtocolError: () => {},
        ...options,
      }),
    );
  return { brokers, createConsumer };
}
