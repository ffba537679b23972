/**
 * Take the screenshots of docs/images/ with the same headless Chromium as the browser tests: a
 * real broker with real producers and consumers running for a minute (so the charts have a
 * history), then the overview, a group and a message.
 *
 *   pnpm --filter @ricochet/dashboard-e2e screenshots
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { build } from 'vite';
import { startBroker, waitFor } from './broker-with-clients.js';
import { launchChromium } from './chromium.js';
import { DASHBOARD_DIR } from './paths.js';

const IMAGES = fileURLToPath(new URL('../../../docs/images/', import.meta.url));
const TRAFFIC_MS = Number(process.env.TRAFFIC_MS ?? 70_000);

await build({ root: DASHBOARD_DIR, logLevel: 'warn' });
mkdirSync(IMAGES, { recursive: true });
const running = await startBroker();
const { admin, endpoint, httpUrl } = running;
await admin('PUT', '/v1/topics/payments', { type: 'fifo' });
await admin('PUT', '/v1/groups/billing', {
  startFrom: 'earliest',
  maxRetries: 2,
  retryPolicy: { type: 'stepped', delaysMs: [1_000, 5_000] },
});
await admin('PUT', '/v1/groups/shipping', { startFrom: 'earliest' });
await admin('PUT', '/v1/groups/ledger', { startFrom: 'earliest', fifo: true });

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const consumers = [
  new PushConsumer({
    endpoint,
    group: 'billing',
    clientId: 'billing-worker-1',
    subscriptions: { orders: '*' },
    onListenerError: () => {},
    listener: async (message) => {
      const order = JSON.parse(new TextDecoder().decode(message.body)) as { order: number };
      if (order.order % 9 === 0) throw new Error('card declined: insufficient funds (code 51)');
      if (order.order % 5 === 0 && message.deliveryAttempt === 1) throw new Error('payment gateway timeout');
      return ConsumeResult.SUCCESS;
    },
  }),
  new PushConsumer({
    endpoint,
    group: 'shipping',
    clientId: 'shipping-worker-1',
    subscriptions: { orders: '*' },
    listener: async () => ConsumeResult.SUCCESS,
  }),
  new PushConsumer({
    endpoint,
    group: 'ledger',
    clientId: 'ledger-worker-1',
    subscriptions: { payments: '*' },
    onListenerError: () => {},
    listener: async (message) => {
      if (message.messageGroup === 'customer-7') throw new Error('ledger account locked');
      return ConsumeResult.SUCCESS;
    },
  }),
];
for (const consumer of consumers) await consumer.start();

const producer = new Producer({ endpoint });
await producer.start();
const browser = await launchChromium();
const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 });
// The overview keeps its history while it is open: open it before the traffic starts.
await page.goto(`${httpUrl}/ui/`);

let order = 0;
let lastMessageId = '';
const started = Date.now();
while (Date.now() - started < TRAFFIC_MS) {
  const second = (Date.now() - started) / 1_000;
  const burst = Math.round(6 + 5 * Math.sin(second / 8));
  for (let i = 0; i < burst; i++) {
    order++;
    const { messageId } = await producer.send({
      topic: 'orders',
      tag: 'created',
      keys: [`order-${order}`],
      properties: { source: 'checkout', region: order % 2 === 0 ? 'eu-west' : 'us-east' },
      body: encode({
        order,
        customer: `customer-${order % 13}`,
        amount: 1_000 + ((order * 37) % 9_000),
        currency: 'EUR',
      }),
    });
    if (order % 9 === 0) lastMessageId = messageId;
    await producer.send({
      topic: 'payments',
      messageGroup: `customer-${order % 8}`,
      body: encode({ order, step: 'capture' }),
    });
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
}

await page.screenshot({ path: `${IMAGES}dashboard-overview.png` });
await page.goto(`${httpUrl}/ui/#/groups/billing`);
await page.locator('[data-testid=dlq] tbody tr').first().waitFor();
await page.screenshot({ path: `${IMAGES}dashboard-group.png`, fullPage: true });
await page.goto(`${httpUrl}/ui/#/groups/ledger`);
await page.locator('[data-testid=fifo-heads]').waitFor();
await page.screenshot({ path: `${IMAGES}dashboard-fifo-group.png`, fullPage: true });
await waitFor('the last declined order in the DLQ', async () => {
  const view = await admin<{ groups: { group: string; state: string }[] }>(
    'GET',
    `/v1/messages/${lastMessageId}`,
  );
  return view.groups.some((group) => group.group === 'billing' && group.state === 'dlq');
});
await page.goto(`${httpUrl}/ui/#/messages/${lastMessageId}`);
await page.locator('.history[data-group=billing] .timeline-list li').nth(2).waitFor();
await page.screenshot({ path: `${IMAGES}dashboard-message.png`, fullPage: true });

await browser.close();
await producer.close();
for (const consumer of consumers) await consumer.close();
await running.close();
process.stdout.write(`screenshots written to ${IMAGES}\n`);
