// Send a message and receive it with a simple consumer. Run: pnpm example send-and-receive
import { Producer } from '@ricochet/producer';
import { SimpleConsumer } from '@ricochet/simple-consumer';

const endpoint = process.env.RICOCHET_ENDPOINT ?? 'ws://127.0.0.1:7720';
const deadline = AbortSignal.timeout(30_000); // no wait below outlasts it (a broker that is down, say)

const consumer = new SimpleConsumer({ endpoint, group: 'billing', subscriptions: { orders: '*' } });
const producer = new Producer({ endpoint });
try {
  // start() registers the subscription. A new group starts at the topic's end (startFrom: 'latest',
  // the default), so start it before sending; and a second run does not get the first run's message.
  await consumer.start({ signal: deadline });
  await producer.start({ signal: deadline });

  const { messageId, offset } = await producer.send({
    topic: 'orders',
    body: '{"orderId":1042}',
    tag: 'created',
  });
  console.log(`sent ${messageId} to orders at offset ${offset}`);

  // Lease up to 10 messages for 30 s. With none ready, the broker holds the call up to 20 s
  // (awaitDurationMs) and answers as soon as one arrives: long polling.
  const messages = await consumer.receive(10, 30_000, { signal: deadline });
  if (messages.length === 0) throw new Error('no message arrived within 20 s');
  for (const message of messages) {
    const { tag, deliveryAttempt } = message;
    console.log(`received ${message.messageId}, tag ${tag}, deliveryAttempt ${deliveryAttempt}`);
    console.log(`  body: ${message.text()}`);
    // ... process the message here ...
    await consumer.ack(message); // not acked within 30 s? It comes back with deliveryAttempt 2.
    console.log(`acked ${message.messageId}`);
  }
} finally {
  await producer.close();
  await consumer.close();
}
