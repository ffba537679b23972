import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { AdminApi } from './support/admin.js';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { expectNewOffsets } from './support/store-queues.js';
import { startBroker } from './support/test-broker.js';

async function watermarkGauge(admin: AdminApi, watermark: string): Promise<number> {
  const metrics = await (await admin.fetch('GET', '/metrics')).text();
  const line = metrics
    .split('\n')
    .find((l) => l.startsWith(`ricochet_store_watermark_exceeded{watermark="${watermark}"}`));
  return line ? Number(line.split(' ').at(-1)) : Number.NaN;
}

/** A send's outcome without throwing: its receipt, or the error's code and message. */
async function trySend(
  producer: Awaited<ReturnType<typeof startProducer>>,
  body: string,
): Promise<{ ok: true; offset: number } | { ok: false; code: number; message: string }> {
  try {
    const { offset } = await producer.send({ topic: 'orders', body });
    return { ok: true, offset };
  } catch (error) {
    const { code, message } = error as { code: number; message: string };
    return { ok: false, code, message };
  }
}

describe('Disk and store watermarks (DESIGN.md §5): sends get 530 while consumption drains the backlog', () => {
  it('refuses sends above --max-store-bytes, keeps delivering and acking, and accepts sends again once retention freed space', async () => {
    await using broker = await startBroker({
      maxStoreBytes: 400_000,
      watermarkCheckIntervalMs: 10,
      dedupWindowMs: 0,
      retentionCheckIntervalMs: 60_000,
    });
    await broker.admin.putTopic('orders', { type: 'normal', retentionMs: 50 });
    await broker.admin.putGroup('billing', { startFrom: 'earliest' });
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
      awaitDurationMs: 0,
    });
    // One attempt: the producer's own 530 retries (R2) would hide the refusal.
    await using producer = await startProducer(broker.endpoint, { maxAttempts: 1 });
    const body = 'x'.repeat(8 * 1_024);

    let refused: { code: number; message: string } | undefined;
    let stored = 0;
    for (let i = 0; i < 1_000 && !refused; i++) {
      const outcome = await trySend(producer, body);
      if (outcome.ok) stored++;
      else refused = outcome;
      await broker.checkWatermarks();
    }
    expect(refused?.code).toBe(530);
    expect(refused?.message).toContain('--max-store-bytes');
    expect(stored).toBeGreaterThan(0);
    expect(await watermarkGauge(broker.admin, 'max_store')).toBe(1);

    // Consumption goes on: every stored message is delivered and acked while sends are refused.
    let acked = 0;
    for (let round = 0; round < 100 && acked < stored; round++) {
      for (const message of await consumer.receive(32, 60_000)) {
        await consumer.ack(message);
        acked++;
      }
    }
    expect(acked).toBe(stored);
    expect((await trySend(producer, body)).ok).toBe(false);

    // Retention deletes the acked messages once expired; the next check lets sends in again.
    let resumed: Awaited<ReturnType<typeof trySend>> | undefined;
    for (let i = 0; i < 2_000 && !resumed?.ok; i++) {
      await broker.runRetentionPass();
      await broker.checkWatermarks();
      resumed = await trySend(producer, 'after');
      if (!resumed.ok) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    if (!resumed?.ok) throw new Error('sends were never accepted again');
    expectNewOffsets([resumed.offset], stored);
    // Each broker of a spread cluster decides from a reading of its own: the send was accepted by
    // its queue's owner, whose check may have read the store after the first broker's did (a
    // deletion committed between the two). A check made now reads what every broker has freed.
    await broker.checkWatermarks();
    expect(await watermarkGauge(broker.admin, 'max_store')).toBe(0);
  });

  it('refuses sends while free disk space is below --min-free-disk-bytes, and still acks', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-watermark-'));
    onTestFinished(() => rmSync(dataDir, { recursive: true, force: true }));
    {
      await using healthy = await startBroker({}, dataDir);
      await using producer = await startProducer(healthy.endpoint);
      await producer.send({ topic: 'orders', body: 'before' });
    }

    // No disk has this much free space: the broker must refuse every send, from its first check.
    await using broker = await startBroker({ minFreeDiskBytes: Number.MAX_SAFE_INTEGER }, dataDir);
    await broker.checkWatermarks();
    await broker.admin.putGroup('billing', { startFrom: 'earliest' });
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
      awaitDurationMs: 0,
    });
    await using refusedProducer = await startProducer(broker.endpoint, { maxAttempts: 1 });
    const outcome = await trySend(refusedProducer, 'refused');
    expect(outcome).toMatchObject({ ok: false, code: 530 });
    expect(outcome.ok ? '' : outcome.message).toContain('--min-free-disk-bytes');
    expect(await watermarkGauge(broker.admin, 'min_free_disk')).toBe(1);
    const [message] = await consumer.receive(1, 60_000);
    if (!message) throw new Error('the stored message was not delivered');
    await consumer.ack(message);
    expect((await broker.admin.getGroup('billing')).stats.committed).toBe(1);
  });
});
