import { FAST_BACKOFF, type FakeBrokerPerTest, fakeBrokerPerTest } from '@ricochet/client-testkit';
import { afterEach, vi } from 'vitest';
import { Producer, type ProducerOptions } from './producer.js';

/**
 * The set-up every producer test file shares: a fake broker per test, and producers that reconnect
 * and retry fast, closed after each test.
 */
export function producersPerTest(): {
  readonly brokers: FakeBrokerPerTest<Producer>;
  readonly createProducer: (
    endpoint: ProducerOptions['endpoint'],
    options?: Partial<ProducerOptions>,
  ) => Producer;
} {
  const brokers = fakeBrokerPerTest((producer: Producer) => producer.close({ timeoutMs: 0 }));
  afterEach(() => {
    vi.restoreAllMocks();
  });
  const createProducer = (endpoint: ProducerOptions['endpoint'], options: Partial<ProducerOptions> = {}) =>
    brokers.track(
      new Producer({
        endpoint,
        reconnectBackoff: FAST_BACKOFF,
        retryBackoff: FAST_BACKOFF,
        onProtocolError: () => {},
        ...options,
      }),
    );
  return { brokers, createProducer };
}
