import type { SendResult } from '@ricochet/producer';
import type { SimpleConsumer, SimpleConsumerOptions } from '@ricochet/simple-consumer';
import { startProducer, startSimpleConsumer } from './clients.js';
import { startBroker, type TestBroker } from './test-broker.js';
import type { TransportName } from './transports.js';

/** What {@link oneMessageForSimpleConsumer} sets up; `await using` stops all of it. */
export interface OneMessageScenario extends AsyncDisposable {
  readonly broker: TestBroker;
  readonly consumer: SimpleConsumer;
  /** The receipt of the one message sent. */
  readonly sent: SendResult;
}

/**
 * Where most simple-consumer tests start: a broker, the group `billing` reading `orders` from its
 * beginning, one message (body `x`) sent there, and a started simple consumer of the group, both
 * clients over `transport`.
 */
export async function oneMessageForSimpleConsumer(
  consumerOptions: Partial<SimpleConsumerOptions> = {},
  transport: TransportName = 'ws',
): Promise<OneMessageScenario> {
  const broker = await startBroker();
  try {
    await broker.admin.putGroup('billing', { startFrom: 'earliest' });
    const endpoint = broker.endpointFor(transport);
    await using producer = await startProducer(endpoint);
    const sent = await producer.send({ topic: 'orders', body: 'x' });
    const consumer = await startSimpleConsumer(endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
      ...consumerOptions,
    });
    return {
      broker,
      consumer,
      sent,
      async [Symbol.asyncDispose]() {
        await consumer.close();
        await broker.close();
      },
    };
  } catch (error) {
    await broker.close();
    throw error;
  }
}
