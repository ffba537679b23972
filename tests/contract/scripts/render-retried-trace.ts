/**
 * Renders the trace of one retried message from a real run into docs/guides/observability.md:
 * a broker on 127.0.0.1:0 over a temporary data directory, a producer and a push consumer with the
 * OpenTelemetry SDK's in-memory exporter, a message that fails twice and then succeeds, and one
 * that exhausts `maxRetries` and is read from the DLQ. The text waterfall replaces what stands
 * between the `trace-rendering` markers of the guide.
 *
 * Run: pnpm --filter @ricochet/contract-tests run render-trace
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBroker } from '@ricochet/broker';
import { ConsumeResult } from '@ricochet/push-consumer';
import { AdminApi } from '../src/support/admin.js';
import { startProducer, startSimpleConsumer } from '../src/support/clients.js';
import { startRecordingConsumer } from '../src/support/push.js';
import { installTracing, renderWaterfall } from '../src/support/tracing.js';

const GUIDE = new URL('../../../docs/guides/observability.md', import.meta.url);
const START = '<!-- trace-rendering:start -->';
const END = '<!-- trace-rendering:end -->';

async function main(): Promise<void> {
  await using tracing = installTracing();
  // Outside vitest, so not the tests' startBroker (it reads vitest's injected store settings).
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-trace-'));
  const server = await buildBroker({ dataDir, host: '127.0.0.1', port: 0, logLevel: 'silent' });
  const { url, port } = await server.listen();
  await using _cleanup = {
    async [Symbol.asyncDispose]() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  const broker = { endpoint: url, admin: new AdminApi(`http://127.0.0.1:${port}`) };
  await broker.admin.putGroup('billing', {
    startFrom: 'earliest',
    maxRetries: 2,
    retryPolicy: { type: 'stepped', delaysMs: [100, 200] },
  });
  await using consumer = await startRecordingConsumer(
    broker.endpoint,
    { group: 'billing', subscriptions: { orders: '*' } },
    (message) => {
      if (message.text() === 'poison') return ConsumeResult.FAILURE;
      if (message.deliveryAttempt === 1) throw new Error('payment service unavailable');
      return message.deliveryAttempt === 2 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
    },
  );
  await using producer = await startProducer(broker.endpoint);
  const retried = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });
  await consumer.delivered(3);
  const retriedSpans = await tracing.ended(4);
  const poison = await producer.send({ topic: 'orders', body: 'poison' });
  await consumer.delivered(6);
  await broker.admin.putGroup('ops', { startFrom: 'earliest' });
  await using dlqReader = await startSimpleConsumer(broker.endpoint, {
    group: 'ops',
    subscriptions: { '%DLQ%billing': '*' },
  });
  const [dead] = await dlqReader.receive(1, 30_000);
  if (dead === undefined) throw new Error('the DLQ is empty');
  await dlqReader.ack(dead);
  const allSpans = await tracing.ended(4 + 5);
  const traceOf = (messageId: string, spans: typeof allSpans) =>
    spans.filter((span) => span.attributes['messaging.message.id'] === messageId);

  const rendering = [
    '```text',
    `# message ${retried.messageId}: fails twice, then succeeds (stepped retry delays 100 ms, 200 ms)`,
    renderWaterfall(traceOf(retried.messageId, retriedSpans)),
    '',
    `# message ${poison.messageId}: fails 3 times (maxRetries 2), then is read from %DLQ%billing`,
    renderWaterfall(traceOf(poison.messageId, allSpans)),
    '```',
  ].join('\n');
  const guide = readFileSync(GUIDE, 'utf8');
  const [before, rest] = guide.split(START);
  const after = rest?.split(END)[1];
  if (before === undefined || after === undefined) throw new Error(`the guide has no ${START} … ${END}`);
  writeFileSync(GUIDE, `${before}${START}\n${rendering}\n${END}${after}`);
  process.stdout.write(`${rendering}\n`);
}

await main();
