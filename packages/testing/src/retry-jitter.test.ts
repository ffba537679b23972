import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { walkOneMessage } from './one-message.fixture.js';
import { startTestBroker } from './test-broker.js';

const MINUTE = 60_000;

describe('a jittered retry policy on the virtual clock (X3)', () => {
  it('draws each delay from the broker’s random: a pinned draw gives its schedule to the millisecond', async () => {
    // A random pinned at its lowest (0) draws the spread's floor: 10 min × (1 − 0.5) = 5 min.
    await using broker = await startTestBroker({ random: () => 0 });
    await broker.admin.putGroup('billing', {
      retryPolicy: { type: 'fixed', delayMs: 10 * MINUTE, jitter: 0.5 },
      maxRetries: 3,
    });
    await using walk = await walkOneMessage(broker, (message) =>
      message.deliveryAttempt <= 3 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS,
    );
    const { messageId } = walk;

    const history = await broker.history(messageId, { group: 'billing' });
    expect(history.map((delivery) => delivery.result)).toEqual(['failed', 'failed', 'failed', 'committed']);
    // Without the jitter: 10, 20 and 30 min.
    expect(history.map((delivery) => delivery.elapsedMs)).toEqual([0, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE]);
  });
});
