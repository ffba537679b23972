import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { putGroup } from '../admin.js';
import { runPool } from '../pool.js';
import { startBrokerProcess } from '../processes.js';

/** X5's limit in the bench: the group's `maxDeliveriesPerSecond`. */
export const X5_LIMIT_PER_SECOND = 500;
/** X5's consumers, push, all in one group. */
export const X5_CONSUMERS = 3;
/** How long the rate is measured over. */
export const X5_WINDOW_MS = 10_000;
/** Pre-published: more than the window can deliver at the limit, so the consumers never run dry. */
const X5_MESSAGES = Math.ceil((X5_LIMIT_PER_SECOND * X5_WINDOW_MS * 1.5) / 1_000);
const BODY = randomBytes(256);

/**
 * X5 a group's delivery rate: 7,500 pre-published messages, a group with `maxDeliveriesPerSecond`
 * 500, three push consumers. The rate is the deliveries the listeners saw in the 10 s after the
 * consumers started, ÷ 10 s: the target is 500 ± 5 % (the bucket's burst, 50, is 1 % of it).
 */
export async function runX5(): Promise<{ rate: number }> {
  await using broker = await startBrokerProcess();
  await putGroup(broker.endpoint, 'x5', {
    startFrom: 'earliest',
    maxDeliveriesPerSecond: X5_LIMIT_PER_SECOND,
  });
  const producer = new Producer({ endpoint: broker.endpoint });
  await runPool(X5_MESSAGES, 1_000, async () => void (await producer.send({ topic: 'x5', body: BODY })));
  await producer.close();
  let startedAt = Number.POSITIVE_INFINITY;
  let inWindow = 0;
  const consumers = Array.from(
    { length: X5_CONSUMERS },
    () =>
      new PushConsumer({
        endpoint: broker.endpoint,
        group: 'x5',
        subscriptions: { x5: '*' },
        listener: () => {
          if (performance.now() - startedAt <= X5_WINDOW_MS) inWindow++;
          return ConsumeResult.SUCCESS;
        },
      }),
  );
  try {
    startedAt = performance.now();
    await Promise.all(consumers.map((consumer) => consumer.start()));
    await new Promise((resolve) => setTimeout(resolve, X5_WINDOW_MS - (performance.now() - startedAt)));
  } finally {
    await Promise.all(consumers.map((consumer) => consumer.close()));
  }
  return { rate: (inWindow * 1_000) / X5_WINDOW_MS };
}
