// FIFO: each message group in order, a failure holds back only its own group. Run: pnpm example fifo
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';

const endpoint = process.env.RICOCHET_ENDPOINT ?? 'ws://127.0.0.1:7720';
const admin = endpoint.replace(/^ws/, 'http'); // the admin HTTP API shares the broker's port
const deadline = AbortSignal.timeout(30_000); // no wait below outlasts it

async function put(path, body) {
  const init = { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  const response = await fetch(`${admin}${path}`, init);
  if (!response.ok) throw new Error(`PUT ${path}: ${response.status} ${await response.text()}`);
}
// Both PUTs are idempotent. A FIFO group retries after a fixed 3 s by default; 1 s here.
await put('/v1/topics/ledger', { type: 'fifo' });
await put('/v1/groups/bookkeeping', { fifo: true, retryPolicy: { type: 'fixed', delayMs: 1_000 } });

const processed = [];
let allProcessed;
const done = new Promise((resolve, reject) => {
  allProcessed = resolve;
  deadline.addEventListener('abort', () => reject(deadline.reason));
});
const consumer = new PushConsumer({
  endpoint,
  group: 'bookkeeping',
  subscriptions: { ledger: '*' },
  listener: async (message) => {
    const entry = `${message.messageGroup} ${message.text()} (delivery ${message.deliveryAttempt})`;
    if (message.text() === 'A1' && message.deliveryAttempt === 1) {
      console.log(`${entry}: FAILURE, so acct-A waits`);
      return ConsumeResult.FAILURE;
    }
    console.log(`${entry}: done`);
    processed.push(message.text());
    if (processed.length === 5) allProcessed();
    return ConsumeResult.SUCCESS;
  },
});
const producer = new Producer({ endpoint });
try {
  // Subscribe before sending: a new group starts at the topic's end (startFrom: 'latest').
  await consumer.start({ signal: deadline });
  // Sent in one go: sends made together travel in one frame and are stored in the order made.
  const entries = [
    ['acct-A', 'A1'],
    ['acct-A', 'A2'],
    ['acct-B', 'B1'],
    ['acct-A', 'A3'],
    ['acct-B', 'B2'],
  ];
  await Promise.all(
    entries.map(([messageGroup, body]) => producer.send({ topic: 'ledger', messageGroup, body })),
  );
  await done;
  console.log(`processed in this order: ${processed.join(' ')}`);
} finally {
  await producer.close();
  await consumer.close();
}
