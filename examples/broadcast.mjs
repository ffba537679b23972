// Broadcasting: every instance of a group gets every message. Run: pnpm example broadcast
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';

const endpoint = process.env.RICOCHET_ENDPOINT ?? 'ws://127.0.0.1:7720';
const admin = endpoint.replace(/^ws/, 'http'); // the admin HTTP API shares the broker's port
const deadline = AbortSignal.timeout(30_000); // no wait below outlasts it

// Idempotent. In a broadcasting group each instance, named by its clientId, has its own position.
const response = await fetch(`${admin}/v1/groups/price-caches`, {
  method: 'PUT',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ consumeMode: 'broadcasting' }),
});
if (!response.ok) throw new Error(`PUT group: ${response.status} ${await response.text()}`);

const received = new Map([
  ['cache-eu', []],
  ['cache-us', []],
]);
let allReceived;
const done = new Promise((resolve, reject) => {
  allReceived = resolve;
  deadline.addEventListener('abort', () => reject(deadline.reason));
});
// Two instances, as two processes of a service would be: each keeps its clientId across restarts,
// and resumes where it stopped. A failure is never retried in a broadcasting group.
const consumers = [...received.keys()].map(
  (clientId) =>
    new PushConsumer({
      endpoint,
      clientId,
      group: 'price-caches',
      subscriptions: { prices: '*' },
      listener: (message) => {
        const seen = received.get(clientId);
        seen.push(message.text());
        console.log(`${clientId} got ${message.text()} (delivery ${message.deliveryAttempt})`);
        if ([...received.values()].every((list) => list.length === 2)) allReceived();
        return ConsumeResult.SUCCESS;
      },
    }),
);
const producer = new Producer({ endpoint });
try {
  // Subscribe before sending: a new instance starts at the topic's end (startFrom: 'latest').
  await Promise.all(consumers.map((consumer) => consumer.start({ signal: deadline })));
  await producer.send({ topic: 'prices', body: 'SKU-1 = 9.99' });
  await producer.send({ topic: 'prices', body: 'SKU-2 = 24.50' });
  await done;
  for (const [clientId, bodies] of received) console.log(`${clientId}: ${bodies.join(', ')}`);
} finally {
  await producer.close();
  await Promise.all(consumers.map((consumer) => consumer.close()));
}
