import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTestBroker } from './broker.test-support.js';

const BODY = new Uint8Array(1_024).fill(7);
const PER_ROUND = 500;

/**
 * Bounded disk (DESIGN.md §5): with retention, the store's size follows traffic × retention, not
 * time. LMDB reuses the pages retention frees (as long as no read transaction pins them), so
 * after a warm-up the data file stops growing. Retention by size here, so the test does not depend
 * on how fast the machine is; `pnpm --filter @ricochet/bench run retention-disk` runs the same by
 * age, for minutes.
 */
describe('bounded disk', () => {
  it('stops growing the data file once retention deletes as much as is written', async () => {
    await using broker = await startTestBroker({
      dedupWindowMs: 0,
      retentionCheckIntervalMs: 3_600_000,
      flushPolicy: 'commit',
    });
    await broker.engine.putTopic('stream', {
      type: 'normal',
      retentionBytes: 2 * PER_ROUND * BODY.byteLength,
    });
    let sent = 0;
    let longestBatchMs = 0;
    const round = async () => {
      const messages = Array.from({ length: PER_ROUND }, () => ({
        messageId: `${String(sent++).padStart(32, '0')}`,
        topic: 'stream',
        body: BODY,
        bornAt: Date.now(),
      }));
      for (const receipt of await broker.engine.send(messages)) expect(receipt.ok).toBe(true);
      const report = await broker.engine.runRetentionPass();
      longestBatchMs = Math.max(longestBatchMs, report.longestBatchMs);
    };
    const dataFile = join(broker.dataDir, 'data.mdb');
    for (let i = 0; i < 10; i++) await round();
    const warmedUp = statSync(dataFile).size;
    for (let i = 0; i < 40; i++) await round();
    const after = statSync(dataFile).size;

    expect((await broker.engine.describeTopic('stream'))?.stats).toMatchObject({
      nextOffset: 50 * PER_ROUND,
    });
    expect((await broker.engine.describeTopic('stream'))?.stats.messages).toBeLessThanOrEqual(2 * PER_ROUND);
    // Four times as much written again: without page reuse the file would hold all of it, about
    // five times its size after the warm-up. It may grow by a margin: how many freed pages a commit
    // can reuse depends on which read transactions pin them at that moment, which a loaded machine
    // changes (1.55 times was seen once with another process busy).
    expect(after).toBeLessThanOrEqual(warmedUp * 2);
    expect(after).toBeLessThan((50 * PER_ROUND * BODY.byteLength) / 3);
    console.log(
      `bounded disk: data file ${warmedUp} bytes after 10 rounds, ${after} after 50; longest retention batch ${longestBatchMs.toFixed(2)} ms`,
    );
  }, 120_000);
});
