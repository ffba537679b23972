import { Producer, type ProducerOptions } from '@ricochet/producer';
import { SimpleConsumer, type SimpleConsumerOptions } from '@ricochet/simple-consumer';

/** Millisecond-scale reconnect backoff, so tests never wait a real second. */
export const FAST_BACKOFF = { initialMs: 5, maxMs: 50, minConnectTimeoutMs: 2_000 } as const;

/** A started producer; `await using` closes it. */
export async function startProducer(
  endpoint: ProducerOptions['endpoint'],
  options: Partial<ProducerOptions> = {},
): Promise<Producer> {
  const producer = new Producer({ endpoint, reconnectBackoff: FAST_BACKOFF, ...options });
  await producer.start();
  return producer;
}

/** A started simple consumer; `await using` closes it. */
export async function startSimpleConsumer(
  endpoint: string,
  options: Pick<SimpleConsumerOptions, 'group' | 'subscriptions'> & Partial<SimpleConsumerOptions>,
): Promise<SimpleConsumer> {
  const consumer = new SimpleConsumer({
    endpoint,
    awaitDurationMs: 5_000,
    reconnectBackoff: FAST_BACKOFF,
    ...options,
  });
  await consumer.start();
  return consumer;
}

/** UTF-8 text of a body, for assertions. */
export function text(body: Uint8Array): string {
  return new TextDecoder().decode(body);
}
