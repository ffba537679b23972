// A push consumer whose listener fails twice, then succeeds. Run: pnpm example push-with-retries
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';

const endpoint = process.env.RICOCHET_ENDPOINT ?? 'ws://127.0.0.1:7720';
const admin = endpoint.replace(/^ws/, 'http'); // the admin HTTP API shares the broker's port
const deadline = AbortSignal.timeout(30_000); // no wait below outlasts it

// A failed delivery is retried on its group's schedule: 10 s, 30 s, 1 min … 2 h by default. This
// group retries every 500 ms instead, so the example takes a second. The PUT is idempotent.
const response = await fetch(`${admin}/v1/groups/payments`, {
  method: 'PUT',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ retryPolicy: { type: 'fixed', delayMs: 500 } }),
});
if (!response.ok) throw new Error(`PUT /v1/groups/payments: ${response.status} ${await response.text()}`);

let charged; // resolves `done` once a charge went through
const done = new Promise((resolve, reject) => {
  charged = resolve;
  deadline.addEventListener('abort', () => reject(deadline.reason));
});

const consumer = new PushConsumer({
  endpoint,
  group: 'payments',
  subscriptions: { charges: '*' },
  listener: async (message) => {
    // deliveryAttempt is 1 on the first delivery; the messageId never changes.
    const attempt = `delivery ${message.deliveryAttempt} of ${message.messageId}`;
    if (message.deliveryAttempt === 1) {
      console.log(`${attempt}: returning FAILURE`);
      return ConsumeResult.FAILURE;
    }
    if (message.deliveryAttempt === 2) {
      console.log(`${attempt}: throwing`);
      throw new Error('the card gateway timed out'); // a throw fails the delivery too
    }
    console.log(`${attempt}: charged ${message.text()}`);
    charged();
    return ConsumeResult.SUCCESS;
  },
  // Told of every listener that throws (default: console.warn with the stack).
  onListenerError: (error) => console.log(`  the listener threw: ${error.message}`),
});
const producer = new Producer({ endpoint });
try {
  // Subscribe before sending: a new group starts at the topic's end (startFrom: 'latest', the
  // default), which also keeps a second run from seeing the first run's message.
  await consumer.start({ signal: deadline });
  await producer.send({ topic: 'charges', body: '{"orderId":1042,"amountCents":4200}' });
  await done;
} finally {
  await producer.close();
  await consumer.close();
}
