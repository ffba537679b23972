import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { walkOneMessage } from './one-message.fixture.js';
import { startTestBroker } from './test-broker.js';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;

describe('a retry budget on the virtual clock (X2, X6)', () => {
  it('ends the default schedule at 30 min: the retry that would come at 36 min 40 s goes to the DLQ', async () => {
    await using broker = await startTestBroker();
    await broker.admin.putGroup('billing', { maxRetryDurationMs: 30 * MINUTE });
    const startedAtMs = broker.clock.now();
    await using walk = await walkOneMessage(broker, () => ConsumeResult.FAILURE);
    const { messageId } = walk;

    // P3's steps 10 s, 30 s, 1 … 7 min: the 10th delivery is at 28 min 40 s; the 8 min after it is past 30 min.
    const history = await broker.history(messageId, { group: 'billing' });
    expect(history).toHaveLength(10);
    expect(history.at(-1)).toMatchObject({ result: 'deadLettered', elapsedMs: 28 * MINUTE + 40 * SECOND });
    expect(await broker.expectInDlq('billing', messageId)).toMatchObject({
      attempts: 10,
      cause: 'retryBudget',
      firstFailedAt: startedAtMs,
    });
  });
});
