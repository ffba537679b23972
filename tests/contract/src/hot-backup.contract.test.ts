import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AdminApi } from './support/admin.js';
import { runBrokerCli, startChildBroker } from './support/child-broker.js';
import { startProducer, text } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';

/** The retry delay of the message left in WaitingRetry: long enough to outlast the backup. */
const RETRY_DELAY_MS = 2_500;

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('Hot backup (DESIGN.md §5): `ricochet-broker backup` copies a running broker’s data directory', () => {
  it('gives a copy on which a broker serves every message, group position, pending retry and DLQ entry', async () => {
    const dataDir = tempDir('ricochet-live-');
    const backupDir = join(tempDir('ricochet-backup-'), 'copy');
    await using live = await startChildBroker(dataDir);
    const admin = new AdminApi(live.endpoint.replace('ws://', 'http://'));
    await admin.putGroup('billing', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: RETRY_DELAY_MS },
    });
    await admin.putGroup('strict', { startFrom: 'earliest', maxRetries: 0 });

    await using producer = await startProducer(live.endpoint);
    const sent = [];
    for (let i = 0; i < 5; i++) sent.push(await producer.send({ topic: 'orders', body: `order-${i}` }));
    const poison = await producer.send({ topic: 'payments', body: 'poison' });
    {
      // billing acks every order but order-3, which fails once: WaitingRetry for 2.5 s.
      await using billing = await startRecordingConsumer(
        live.endpoint,
        { group: 'billing', subscriptions: { orders: '*' } },
        (message) => (text(message.body) === 'order-3' ? { type: 'failure' } : { type: 'success' }),
      );
      await using strict = await startRecordingConsumer(
        live.endpoint,
        { group: 'strict', subscriptions: { payments: '*' } },
        () => ({ type: 'failure' }),
      );
      await Promise.all([billing.delivered(5), strict.delivered(1)]);
      await eventually(
        () => admin.getGroup('billing'),
        (group) => group.stats.committed === 4 && group.stats.waitingRetry === 1,
      );
      await eventually(
        () => admin.listDlq('strict'),
        (page) => page.messages.length === 1,
      );
    }

    // While the broker runs and a producer keeps sending.
    const backup = runBrokerCli(['backup', '--data-dir', dataDir, '--to', backupDir], 60_000);
    const during = await producer.send({ topic: 'orders', body: 'during-backup' });
    const run = await backup;
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/copied to .*data\.mdb \(\d+ bytes\)/);
    await live.kill9();

    await using restored = await startBroker({}, backupDir);
    for (const receipt of sent) {
      const view = await restored.admin.getMessage(receipt.messageId);
      expect(view.message).toMatchObject({ topic: 'orders', offset: receipt.offset });
    }
    expect((await restored.admin.getMessage(poison.messageId)).message.topic).toBe('payments');
    expect(await restored.admin.getGroup('billing')).toMatchObject({
      config: { retryPolicy: { type: 'fixed', delayMs: RETRY_DELAY_MS } },
      // The retry may have fallen due by now (a child broker and the CLI start slowly under load).
      stats: { committed: 4 },
    });
    expect((await restored.admin.listDlq('strict')).messages).toMatchObject([
      { messageId: poison.messageId, originTopic: 'payments' },
    ]);

    // The pending retry fires on the copy: order-3 again, attempt 2 (had its WaitingRetry record
    // been lost, it would come back as attempt 1, or not at all). billing's position holds:
    // nothing it acked comes back, and the message sent during the backup follows if it made it.
    await using billing = await startRecordingConsumer(
      restored.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      () => ({ type: 'success' }),
    );
    const [retried] = await billing.delivered(1);
    const copiedDuring = (await restored.admin.getTopic('orders')).stats.nextOffset > during.offset;
    const expected = copiedDuring ? 2 : 1;
    const seen = await billing.delivered(expected);
    const bodies = seen.map((delivery) => text(delivery.message.body)).sort();
    expect(bodies).toEqual(copiedDuring ? ['during-backup', 'order-3'] : ['order-3']);
    const attemptOf = (body: string) =>
      seen.find((delivery) => text(delivery.message.body) === body)?.message.deliveryAttempt;
    expect(attemptOf('order-3')).toBe(2);
    expect(retried).toBeDefined();
    await eventually(
      () => restored.admin.getGroup('billing'),
      (group) => group.stats.committed === 4 + expected && group.stats.waitingRetry === 0,
      10_000,
    );
    expect(billing.deliveries).toHaveLength(expected);
    // Child processes (a broker, the CLI) start slowly on a loaded machine.
  }, 90_000);

  it('refuses a target that is not empty and a directory without data, with a message and exit code 1', async () => {
    const notEmpty = tempDir('ricochet-target-');
    const dataDir = tempDir('ricochet-data-');
    {
      await using broker = await startBroker({}, dataDir);
      await using producer = await startProducer(broker.endpoint);
      await producer.send({ topic: 'orders', body: 'x' });
    }
    const first = await runBrokerCli(['backup', '--data-dir', dataDir, '--to', dataDir], 60_000);
    expect(first.code).toBe(1);
    expect(first.stderr).toContain('is not empty');
    const second = await runBrokerCli(
      ['backup', '--data-dir', notEmpty, '--to', join(notEmpty, 'copy')],
      60_000,
    );
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('no Ricochet data');
    const third = await runBrokerCli(['backup', '--data-dir', dataDir], 60_000);
    expect(third.code).toBe(2);
  }, 90_000);
});
