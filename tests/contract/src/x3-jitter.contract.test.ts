import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';

const MESSAGES = 24;
const DELAY_MS = 1_000;
const JITTER = 0.9;

describe('X3: a retry policy’s jitter draws each delay within ±jitter of the policy’s', () => {
  it('spreads a fixed 1 000 ms over 100 to 1 900 ms, where jitter 0 never waits less than 1 000 ms', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: DELAY_MS, jitter: JITTER },
      // Successes too, so each message's second delivery is in its history with the broker's times.
      history: 'full',
    });
    expect((await broker.admin.getGroup('billing')).config.retryPolicy).toEqual({
      type: 'fixed',
      delayMs: DELAY_MS,
      jitter: JITTER,
    });
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      (message) => (message.deliveryAttempt === 1 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS),
    );
    await using producer = await startProducer(broker.endpoint);
    const messageIds: string[] = [];
    for (let i = 0; i < MESSAGES; i++)
      messageIds.push((await producer.send({ topic: 'orders', body: `m${i}` })).messageId);
    await consumer.delivered(2 * MESSAGES);
    // The listener sees the last retry before its success reaches the broker: the history holds the
    // second delivery once the broker has committed it.
    await eventually(
      () => broker.admin.getGroup('billing').then((group) => group.stats.committed),
      (committed) => committed === MESSAGES,
    );

    const gapsMs: number[] = [];
    for (const messageId of messageIds) {
      const [failed, retried] = (await broker.admin.getMessage(messageId)).groups[0]?.history ?? [];
      expect(failed?.result).toBe('failed');
      expect(retried?.deliveryAttempt).toBe(2);
      // The broker's own times: the delay counts from the failure (P3); a late timer only adds.
      gapsMs.push((retried?.deliveredAt ?? 0) - (failed?.settledAt ?? 0));
    }
    // Never below the spread's floor, 1 000 × (1 − 0.9)…
    for (const gapMs of gapsMs) expect(gapMs).toBeGreaterThanOrEqual(Math.floor(DELAY_MS * (1 - JITTER)));
    // …and some well below the policy's 1 000 ms, which jitter 0 never goes under. Each draw falls
    // below 700 ms with probability 1/3, so all 24 missing it has odds of 6 in 100 000.
    expect(Math.min(...gapsMs)).toBeLessThan(700);
  });

  it('refuses a jitter outside 0 (inclusive) to 1 (exclusive) with the catalogue’s code, and keeps the config', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', { retryPolicy: { type: 'stepped', delaysMs: [100] } });
    for (const jitter of [1, -0.5]) {
      const response = await broker.admin.fetch('PUT', '/v1/groups/billing', {
        retryPolicy: { type: 'stepped', delaysMs: [100], jitter },
      });
      expect(response.status).toBe(400);
      const answer = (await response.json()) as { error: { name: string; issues: { path: string[] }[] } };
      expect(answer.error.name).toBe('BAD_REQUEST');
      expect(answer.error.issues.map((issue) => issue.path.join('.'))).toEqual(['retryPolicy.jitter']);
    }
    expect((await broker.admin.getGroup('billing')).config.retryPolicy).toEqual({
      type: 'stepped',
      delaysMs: [100],
    });
  });
});
