import { afterEach } from 'vitest';
import { FakeBroker, type FakeBrokerOptions } from './fake-broker.js';

/** What {@link fakeBrokerPerTest} gives a test file. */
export interface FakeBrokerPerTest<TClient> {
  /** Start this test's fake broker. */
  start(options?: FakeBrokerOptions): Promise<FakeBroker>;
  /** Close `client` after this test, before the broker; returns it. */
  track<TTracked extends TClient>(client: TTracked): TTracked;
}

/**
 * The set-up of a client test file: each test starts a fake broker and opens clients against it,
 * and after each test the clients close (with `close`, all at once), then the broker. Call it at
 * the top level of the file; it registers its own `afterEach`.
 *
 * @param close - how to close one client without waiting long, e.g. `close({ timeoutMs: 0 })`.
 */
export function fakeBrokerPerTest<TClient>(
  close: (client: TClient) => Promise<void>,
): FakeBrokerPerTest<TClient> {
  let broker: FakeBroker | undefined;
  const clients: TClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map(close));
    await broker?.close();
    broker = undefined;
  });
  return {
    async start(options = {}) {
      broker = await FakeBroker.start(options);
      return broker;
    },
    track(client) {
      clients.push(client);
      return client;
    },
  };
}
