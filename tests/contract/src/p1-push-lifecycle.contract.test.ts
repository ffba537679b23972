import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('stream'))(
  'P1: Ready → Inflight → Commit | WaitingRetry | DLQ; WaitingRetry → Ready when its delay ends (over %s)',
  (transport) => {
    it('walks a message through Inflight, WaitingRetry, Ready, Inflight and Commit', async () => {
      await using broker = await startBroker();
      // Full history: the success ends the path the history shows.
      await broker.admin.putGroup('billing', {
        startFrom: 'earliest',
        retryPolicy: { type: 'fixed', delayMs: 400 },
        history: 'full',
      });
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'billing', subscriptions: { orders: '*' } },
        async (message) => {
          if (message.deliveryAttempt === 1) return ConsumeResult.FAILURE;
          await held;
          return ConsumeResult.SUCCESS;
        },
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({ topic: 'orders', body: 'x' });
      const stateOf = async () => (await broker.admin.getMessage(messageId)).groups[0]?.state;

      await consumer.delivered(1);
      expect(await eventually(stateOf, (state) => state === 'waitingRetry')).toBe('waitingRetry');
      expect((await broker.admin.getGroup('billing')).stats).toMatchObject({ waitingRetry: 1, inflight: 0 });

      await consumer.delivered(2);
      expect(await stateOf()).toBe('inflight');
      release();
      expect(await eventually(stateOf, (state) => state === 'committed')).toBe('committed');
      const history = (await broker.admin.getMessage(messageId)).groups[0]?.history ?? [];
      expect(history.map((entry) => [entry.deliveryAttempt, entry.result])).toEqual([
        [1, 'failed'],
        [2, 'committed'],
      ]);
      expect((await broker.admin.getGroup('billing')).stats).toMatchObject({
        waitingRetry: 0,
        inflight: 0,
        committed: 1,
      });
    });
  },
);
