import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBroker } from '@ricochet/broker';
import { Producer } from '@ricochet/producer';
import type { GroupView } from '@ricochet/protocol';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { type OutageRun, renderOutageSvg, type TimelineSlice } from './outage-svg.js';

/**
 * `pnpm --filter @ricochet/bench run storm-outage [--messages 100] [--outage-ms 10000]
 * [--svg ../docs/images/failure-storm-outage.svg]`: one outage, twice, on a real broker (in this
 * process, over a temporary data directory, its clients over WebSocket). The group has `maxRetries`
 * 3 and a fixed 500 ms retry policy; `messages` are sent, then a push consumer starts whose listener
 * fails everything for `outage-ms` and succeeds after. Run 1 has the failure-storm rule off, run 2
 * on with its defaults (`pauseOnFailures: {}`, DESIGN.md §11). Every slice of 250 ms it records the
 * deliveries that failed and succeeded, the breaker's state (`GET /v1/groups/:group`) and where the
 * messages are (committed, DLQ); a run ends once every message is committed or dead-lettered and the
 * outage is over. It prints the figures and writes the picture (`outage-svg.ts`) to `--svg`.
 */
function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? fallback : (process.argv[index + 1] ?? fallback);
}

const MESSAGES = Number(option('messages', '100'));
const OUTAGE_MS = Number(option('outage-ms', '10000'));
const SVG_PATH = option('svg', '../docs/images/failure-storm-outage.svg');
const SLICE_MS = 250;
/** A run that has not settled by then is reported as it stands. */
const MAX_RUN_MS = 120_000;
const GROUP = 'billing';
const TOPIC = 'orders';

async function run(ruleOn: boolean): Promise<OutageRun> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-storm-outage-'));
  const broker = await buildBroker({ host: '127.0.0.1', port: 0, dataDir, logLevel: 'warn' });
  const { url, port } = await broker.listen();
  const admin = `http://127.0.0.1:${port}/v1/groups/${GROUP}`;
  const producer = new Producer({ endpoint: url });
  let consumer: PushConsumer | undefined;
  try {
    const put = await fetch(admin, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        startFrom: 'earliest',
        maxRetries: 3,
        retryPolicy: { type: 'fixed', delayMs: 500 },
        ...(ruleOn ? { pauseOnFailures: {} } : {}),
      }),
    });
    if (!put.ok) throw new Error(`PUT group: ${put.status} ${await put.text()}`);
    await producer.start();
    for (let i = 0; i < MESSAGES; i++) await producer.send({ topic: TOPIC, body: `order ${i}` });

    let slice = { failed: 0, succeeded: 0 };
    const startedAt = performance.now();
    const outageEndsAt = startedAt + OUTAGE_MS;
    consumer = new PushConsumer({
      endpoint: url,
      group: GROUP,
      subscriptions: { [TOPIC]: '*' },
      listener: () => {
        if (performance.now() < outageEndsAt) {
          slice.failed++;
          return ConsumeResult.FAILURE;
        }
        slice.succeeded++;
        return ConsumeResult.SUCCESS;
      },
    });
    await consumer.start();

    const slices: TimelineSlice[] = [];
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, SLICE_MS));
      const group = (await (await fetch(admin)).json()) as GroupView;
      const atMs = performance.now() - startedAt;
      slices.push({
        atMs,
        failed: slice.failed,
        succeeded: slice.succeeded,
        breaker: group.pause?.state ?? 'closed',
        committed: group.stats.committed,
        deadLettered: group.stats.dlq,
      });
      slice = { failed: 0, succeeded: 0 };
      const settled = group.stats.committed + group.stats.dlq === MESSAGES;
      if ((settled && atMs > OUTAGE_MS + SLICE_MS) || atMs > MAX_RUN_MS) break;
    }
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return { ruleOn, messages: MESSAGES, outageMs: OUTAGE_MS, slices, probes: probesOf(metrics) };
  } finally {
    await consumer?.close();
    await producer.close();
    await broker.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Probes sent: the breaker's moves from open to half-open (`ricochet_group_breaker_transitions_total`). */
function probesOf(metrics: string): number {
  const line = metrics
    .split('\n')
    .find(
      (each) => each.startsWith('ricochet_group_breaker_transitions_total') && each.includes('to="halfOpen"'),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

function summary(outage: OutageRun): string {
  const last = outage.slices.at(-1);
  const failed = outage.slices.reduce((sum, each) => sum + each.failed, 0);
  const succeeded = outage.slices.reduce((sum, each) => sum + each.succeeded, 0);
  const settledAt = outage.slices.find(
    (each) => each.committed + each.deadLettered === outage.messages,
  )?.atMs;
  return [
    `rule ${outage.ruleOn ? 'on ' : 'off'}:`,
    `${outage.messages} messages, outage ${outage.outageMs} ms;`,
    `deliveries ${failed + succeeded} (${failed} failed, ${succeeded} succeeded), probes ${outage.probes};`,
    `committed ${last?.committed ?? 0}, dead-lettered ${last?.deadLettered ?? 0};`,
    `all settled at ${settledAt === undefined ? '-' : `${(settledAt / 1_000).toFixed(1)} s`}`,
  ].join(' ');
}

const off = await run(false);
console.log(summary(off));
const on = await run(true);
console.log(summary(on));
writeFileSync(SVG_PATH, renderOutageSvg([off, on]));
console.log(`storm-outage: wrote ${SVG_PATH}`);
