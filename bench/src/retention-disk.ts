import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBroker } from '@ricochet/broker';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';

/**
 * `pnpm --filter @ricochet/bench run retention-disk [--duration-s 300] [--rate 2000]
 * [--retention-ms 30000] [--body-bytes 1024]`: bounded disk (DESIGN.md §5) over minutes. A
 * producer sends `rate` messages a second to a topic with `retentionMs`, a push consumer group acks
 * them all (so delivery history is written, and deleted with its messages), and a retention pass
 * runs every second. Every 10 s it prints the data file's size, the most bytes LMDB had in use
 * (`ricochet_store_bytes`) over those 10 s, the messages retained and the longest retention batch: the file should level off once the first
 * messages expire, at about rate × retention × (body + overhead).
 *
 * The broker runs in this process so the script can drive the passes and read the batch times; the
 * dedup window is set to the retention (a message is never deleted within it).
 */
function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  const value = index === -1 ? undefined : Number(process.argv[index + 1]);
  if (value === undefined) return fallback;
  if (!(Number.isFinite(value) && value > 0)) throw new Error(`--${name} needs a positive number`);
  return value;
}

const DURATION_S = option('duration-s', 300);
const RATE = option('rate', 2_000);
const RETENTION_MS = option('retention-ms', 30_000);
const BODY_BYTES = option('body-bytes', 1_024);
const TICK_MS = 50;
const PRINT_EVERY_MS = 10_000;
const TOPIC = 'stream';

const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-retention-disk-'));
const broker = await buildBroker({
  host: '127.0.0.1',
  port: 0,
  dataDir,
  logLevel: 'warn',
  dedupWindowMs: RETENTION_MS,
  // The script runs the passes itself, once a second, to read their reports.
  retentionCheckIntervalMs: 3_600_000,
});
const { url } = await broker.listen();
const producer = new Producer({ endpoint: url });
let acked = 0;
const consumer = new PushConsumer({
  endpoint: url,
  group: 'readers',
  subscriptions: { [TOPIC]: '*' },
  listener: () => {
    acked++;
    return ConsumeResult.SUCCESS;
  },
});
const body = new Uint8Array(BODY_BYTES).fill(42);
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

try {
  broker.engine.putTopic(TOPIC, { type: 'normal', retentionMs: RETENTION_MS });
  await producer.start();
  await consumer.start();
  console.log(
    `retention-disk: ${RATE} msg/s of ${BODY_BYTES} B, retentionMs ${RETENTION_MS}, for ${DURATION_S} s; data in ${dataDir}`,
  );
  console.log('elapsed_s  sent      acked     retained  data.mdb    peak_in_use longest_batch_ms');
  const startedAt = performance.now();
  let sent = 0;
  let failed = 0;
  let longestBatchMs = 0;
  let peakInUse = 0;
  let nextPrintMs = PRINT_EVERY_MS;
  const sends: Promise<unknown>[] = [];
  // The passes run on their own, once a second, while the sends go on.
  let passing = true;
  const passes = (async () => {
    for (let pass = 0; passing && pass < DURATION_S * 10; pass++) {
      const report = await broker.engine.runRetentionPass();
      longestBatchMs = Math.max(longestBatchMs, report.longestBatchMs);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  })();
  const endMs = DURATION_S * 1_000;
  for (let tick = 0; tick < endMs / TICK_MS + 1; tick++) {
    const elapsedMs = performance.now() - startedAt;
    if (elapsedMs >= endMs) break;
    // Send what the rate allows by now, but never a burst of more than a second's worth: on a
    // loaded machine a late tick would otherwise send in bursts that retention then has to keep.
    const due = Math.min(RATE, Math.floor((elapsedMs / 1_000) * RATE) - sent);
    for (let i = 0; i < due; i++) {
      sent++;
      sends.push(
        producer.send({ topic: TOPIC, body }).catch(() => {
          failed++;
        }),
      );
    }
    if (sends.length > 10_000) await Promise.all(sends.splice(0));
    await broker.engine.checkWatermarks();
    peakInUse = Math.max(peakInUse, storedBytesOf(await broker.engine.metrics.render()));
    if (elapsedMs >= nextPrintMs) {
      nextPrintMs += PRINT_EVERY_MS;
      const stats = (await broker.engine.describeTopic(TOPIC))?.stats;
      const fileBytes = statSync(join(dataDir, 'data.mdb')).size;
      console.log(
        [
          String(Math.round(elapsedMs / 1_000)).padEnd(10),
          String(sent).padEnd(9),
          String(acked).padEnd(9),
          String(stats?.messages ?? 0).padEnd(9),
          mib(fileBytes).padEnd(11),
          mib(peakInUse).padEnd(11),
          longestBatchMs.toFixed(2),
        ].join(' '),
      );
      longestBatchMs = 0;
      peakInUse = 0;
    }
    await new Promise((resolve) => setTimeout(resolve, TICK_MS));
  }
  passing = false;
  await passes;
  await Promise.all(sends);
  console.log(`retention-disk: done; ${failed} sends failed`);
} finally {
  await consumer.close();
  await producer.close();
  await broker.close();
  rmSync(dataDir, { recursive: true, force: true });
}

/** LMDB pages in use, from the broker's `ricochet_store_bytes` gauge (set by each watermark check). */
function storedBytesOf(metrics: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith('ricochet_store_bytes '));
  return line ? Number(line.split(' ')[1]) : Number.NaN;
}
