import { describe, it } from 'vitest';
import { retryRunsBeforeCachedFirstDeliveries } from './support/retry-before-cached.js';
import { startBroker } from './support/test-broker.js';

/**
 * docs/protocol/README.md#credit-lending, on three brokers spreading a PostgreSQL store's four
 * queues: P3's "a retry that falls due is delivered before later first deliveries" holds across
 * the owners a push consumer subscribes on (`routeToOwners`), as it holds within one broker
 * (`p3-retry-before-cached-messages`).
 */
describe('P3 across queue owners: a consumer subscribed on every owner lends its credit, retries first', () => {
  // With maxCachedMessages split statically over the owners, the credit a finished listener
  // frees goes back to the owner that delivered it: a retry that fell due at another owner, whose
  // share is spent, waits behind it, and (the listeners holding their first deliveries until the
  // retry comes) never arrives. Lent from one pool, the credit goes to the owner that said a retry waits.
  it('runs a retry that fell due at one owner before the first deliveries cached from the others', async () => {
    await using broker = await startBroker();
    await retryRunsBeforeCachedFirstDeliveries(broker, { routeToOwners: true });
  });
});
