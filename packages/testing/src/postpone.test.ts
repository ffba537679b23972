import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { walkOneMessage } from './one-message.fixture.js';
import { startTestBroker } from './test-broker.js';

const MINUTE = 60_000;

describe('postponing on the virtual clock (X4)', () => {
  it('postpones 20 min at a time without spending an attempt, until the default hour runs out', async () => {
    await using broker = await startTestBroker();
    await broker.admin.putGroup('billing', { maxRetries: 0 });
    await using walk = await walkOneMessage(broker, () => ConsumeResult.postpone(20 * MINUTE));
    const { messageId } = walk;

    // Postponed at 0, 20 and 40 min (back by 60 min, within maxPostponeMs' hour); at 60 min the
    // next would come back at 80 min, so it fails, and with maxRetries 0 that is the DLQ.
    const history = await broker.history(messageId, { group: 'billing' });
    expect(history.map((delivery) => [delivery.elapsedMs, delivery.result])).toEqual([
      [0, 'postponed'],
      [20 * MINUTE, 'postponed'],
      [40 * MINUTE, 'postponed'],
      [60 * MINUTE, 'deadLettered'],
    ]);
    expect(await broker.expectInDlq('billing', messageId)).toMatchObject({
      attempts: 1,
      cause: 'maxRetries',
    });
  });
});
