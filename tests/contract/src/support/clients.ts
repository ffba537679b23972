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
  try {
    await producer.start();
  } catch (error) {
    // The caller gets no handle to close it with: close it here, or it reconnects for ever.
    await producer.close();
    throw error;
  }
  return producer;
}

/**
 * Sends to `topic` that keep their message id when sent again (R2/R3), for tests that send through
 * a fault: `acknowledged` holds the bodies whose send resolved, `refused` the sends that failed,
 * to be sent again with the same ids, so a message stored before its refusal is stored once.
 */
export function sendsKeepingIds(producer: Producer, topic: string) {
  const acknowledged = new Set<string>();
  const refused: { readonly body: string; readonly messageId: string }[] = [];
  const send = async (body: string, messageId: string): Promise<void> => {
    try {
      await producer.send({ topic, body, messageId });
      acknowledged.add(body);
    } catch {
      refused.push({ body, messageId });
    }
  };
  return { acknowledged, refused, send };
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
  try {
    await consumer.start();
  } catch (error) {
    // The caller gets no handle to close it with: close it here, or it reconnects for ever.
    await consumer.close();
    throw error;
  }
  return consumer;
}

/** UTF-8 text of a body, for assertions. */
export function text(body: Uint8Array): string {
  return new TextDecoder().decode(body);
}
