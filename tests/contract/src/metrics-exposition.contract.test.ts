import { spawn, spawnSync } from 'node:child_process';
import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';

/** Debian's `prometheus` package puts promtool here; `.ci/run` installs it. */
const PROMTOOL = process.env.PROMTOOL_PATH ?? 'promtool';
const promtoolInstalled = spawnSync(PROMTOOL, ['--version'], { stdio: 'ignore' }).status === 0;

/** `promtool check metrics` over `exposition` on its stdin: its exit status and what it printed. */
function promtoolCheck(exposition: string): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PROMTOOL, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, output }));
    child.stdin.end(exposition);
  });
}

describe('GET /metrics', () => {
  // CI installs promtool (`.ci/run`), so there this never skips; elsewhere it runs when installed.
  it.skipIf(!promtoolInstalled && process.env.CI !== 'true')(
    "passes Prometheus's own lint (promtool check metrics) with every labelled series present",
    async () => {
      await using broker = await startBroker();
      // One message retried then committed, one dead-lettered: the counters, the retry lateness
      // histogram and the group gauges all carry series when the broker is scraped.
      await broker.admin.putGroup('billing', {
        startFrom: 'earliest',
        maxRetries: 1,
        retryPolicy: { type: 'fixed', delayMs: 5 },
        // X5's gauges carry a series only for a group with a limit.
        maxDeliveriesPerSecond: 1_000,
      });
      await using consumer = await startRecordingConsumer(
        broker.endpoint,
        { group: 'billing', subscriptions: { orders: '*' } },
        (message) =>
          message.deliveryAttempt === 1 || message.properties.poison === 'yes'
            ? ConsumeResult.FAILURE
            : ConsumeResult.SUCCESS,
      );
      await using producer = await startProducer(broker.endpoint);
      await producer.send({ topic: 'orders', body: 'fine' });
      await producer.send({ topic: 'orders', body: 'poison', properties: { poison: 'yes' } });
      await consumer.delivered(4);
      await eventually(
        () => broker.admin.getGroup('billing').then((group) => group.stats),
        (stats) => stats.dlq === 1,
      );

      const exposition = await (await broker.admin.fetch('GET', '/metrics')).text();
      expect(exposition).toMatch(/^ricochet_retry_lateness_seconds_count 2$/m);
      expect(exposition).toMatch(/^ricochet_messages_dead_lettered_total\{group="billing"\} 1$/m);
      expect(exposition).toMatch(/^ricochet_group_max_deliveries_per_second\{group="billing"\} 1000$/m);
      expect(exposition).toMatch(/^ricochet_group_delivery_rate_per_second\{group="billing"\} [\d.]+$/m);
      const { status, output } = await promtoolCheck(exposition);
      expect(output).toBe('');
      expect(status).toBe(0);
    },
    30_000,
  );
});
