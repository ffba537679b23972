import { Producer } from '@ricochet/producer';
import { type MessageListener, PushConsumer } from '@ricochet/push-consumer';
import type { TestBroker } from './test-broker.js';

/** A push consumer of `billing` on `orders` with `listener`, and the id of the one message sent. */
export interface OneMessage extends AsyncDisposable {
  readonly messageId: string;
}

/**
 * For the kit's own tests of one message's retries: start a push consumer of group `billing` with
 * `listener`, send one message to `orders`, wait for its first delivery, then run the virtual
 * clock until nothing is left to do. `await using` closes the consumer and the producer.
 */
export async function walkOneMessage(broker: TestBroker, listener: MessageListener): Promise<OneMessage> {
  const consumer = new PushConsumer({
    endpoint: broker.endpoint,
    group: 'billing',
    subscriptions: { orders: '*' },
    listener,
    onListenerError: () => {},
  });
  const producer = new Producer({ endpoint: broker.endpoint });
  const close = async () => {
    await consumer.close();
    await producer.close();
  };
  try {
    await consumer.start();
    const { messageId } = await producer.send({ topic: 'orders', body: 'order 1042' });
    await broker.waitForDelivery({ group: 'billing', messageId, attempt: 1 });
    await broker.clock.runUntilIdle();
    return { messageId, [Symbol.asyncDispose]: close };
  } catch (error) {
    await close();
    throw error;
  }
}
