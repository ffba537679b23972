// A message that keeps failing goes to its group's DLQ; list it, then redrive it.
// Run: pnpm example dead-letter-queue
import { setTimeout as sleep } from 'node:timers/promises';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';

const endpoint = process.env.RICOCHET_ENDPOINT ?? 'ws://127.0.0.1:7720';
const admin = endpoint.replace(/^ws/, 'http'); // the admin HTTP API shares the broker's port
const deadline = AbortSignal.timeout(30_000); // no wait below outlasts it

async function api(method, path, body) {
  const json = { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  const response = await fetch(`${admin}${path}`, body === undefined ? { method } : { method, ...json });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

// One retry, 200 ms after the first failure; the second failure moves the message to the DLQ
// topic %DLQ%shipping at once. The PUT is idempotent.
await api('PUT', '/v1/groups/shipping', { maxRetries: 1, retryPolicy: { type: 'fixed', delayMs: 200 } });

let warehouseUp = false; // an outage that outlasts the group's retries
let shipped;
const done = new Promise((resolve, reject) => {
  shipped = resolve;
  deadline.addEventListener('abort', () => reject(deadline.reason));
});
const consumer = new PushConsumer({
  endpoint,
  group: 'shipping',
  subscriptions: { shipments: '*' },
  listener: async (message) => {
    if (!warehouseUp) {
      console.log(`delivery ${message.deliveryAttempt}: the warehouse is down, FAILURE`);
      // A message that can never succeed can skip the retries: ConsumeResult.deadLetter('why').
      return ConsumeResult.FAILURE;
    }
    shipped(message); // printed below, after the redrive's answer, which may come later
    return ConsumeResult.SUCCESS;
  },
});
const producer = new Producer({ endpoint });
try {
  // Subscribe before sending: a new group starts at the topic's end (startFrom: 'latest').
  await consumer.start({ signal: deadline });
  const { messageId } = await producer.send({ topic: 'shipments', body: '{"orderId":1042}' });

  let dead; // poll the DLQ listing (oldest first, 100 a page) until the message is in it
  while (dead === undefined) {
    await sleep(100, undefined, { signal: deadline });
    const { messages } = await api('GET', '/v1/groups/shipping/dlq');
    dead = messages.find((entry) => entry.messageId === messageId);
  }
  console.log(`in %DLQ%shipping: ${messageId}, ${dead.attempts} attempts, reason: ${dead.reason}`);

  warehouseUp = true; // fixed: send it back to `shipments`, for this group only
  const { accepted } = await api('POST', '/v1/groups/shipping/dlq/redrive', { messageIds: [messageId] });
  console.log(`redriven: ${accepted}`);
  const redelivered = await done; // a redriven message starts again at deliveryAttempt 1
  console.log(`delivery ${redelivered.deliveryAttempt}: shipped ${redelivered.text()}`);
} finally {
  await producer.close();
  await consumer.close();
}
