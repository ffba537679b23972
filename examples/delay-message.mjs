// Send a message that is delivered 2 s later. Run: pnpm example delay-message
import { Producer } from '@ricochet/producer';
import { SimpleConsumer } from '@ricochet/simple-consumer';

const endpoint = process.env.RICOCHET_ENDPOINT ?? 'ws://127.0.0.1:7720';
const deadline = AbortSignal.timeout(30_000); // no wait below outlasts it

const consumer = new SimpleConsumer({ endpoint, group: 'reminders', subscriptions: { renewals: '*' } });
const producer = new Producer({ endpoint });
try {
  // Register before sending: a new group starts at the topic's end (startFrom: 'latest', the
  // default), which also keeps a second run from seeing the first run's message.
  await consumer.start({ signal: deadline });
  await producer.start({ signal: deadline });

  const sentAt = performance.now();
  // delayMs counts from when the broker stores the message; deliverAt (epoch ms) and RocketMQ's
  // delayLevel (1 = 1 s … 18 = 2 h) work too, up to 24 h ahead.
  const { messageId } = await producer.send({
    topic: 'renewals',
    body: '{"customerId":7,"plan":"pro"}',
    delayMs: 2_000,
  });
  console.log(`sent ${messageId} with delayMs 2000`);

  // The receive waits (long polling, up to 20 s) until the message is due.
  const [message] = await consumer.receive(1, 30_000, { signal: deadline });
  if (message === undefined) throw new Error('no message arrived within 20 s');
  const waitedMs = Math.round(performance.now() - sentAt);
  console.log(`received ${message.messageId} ${waitedMs} ms after the send: ${message.text()}`);
  await consumer.ack(message);
} finally {
  await producer.close();
  await consumer.close();
}
