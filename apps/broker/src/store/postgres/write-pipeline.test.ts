import { afterEach, describe, expect, it } from 'vitest';
import type { BrokerStore } from '../broker-store.js';
import type { Sql } from './driver.js';
import type { StoreLease } from './store-lease.js';
import { WritePipeline, type WritePipelineParts } from './write-pipeline.js';

/**
 * The pipeline between a turn's writes and their commit, with the database and the lease faked:
 * every transaction commits at once, so what is tested is what follows the commit.
 */
const writer = { unsafe: async () => [] } as unknown as Sql;
const lease = {
  ttlMs: 60_000,
  fenceCall: () => ({ text: 'select 1', parameters: [] }),
  fence: async () => [],
  keepLive: async () => {},
} as unknown as StoreLease;
const mirror = { committed: async () => {} } as unknown as BrokerStore;

let pipeline: WritePipeline | undefined;
afterEach(() => pipeline?.stop());

/** A pipeline over the fakes above, from row number 0; `parts` adds to them. */
function newPipeline(parts: Partial<WritePipelineParts> = {}): WritePipeline {
  return new WritePipeline({
    writer,
    lease,
    mirror,
    localFailures: [],
    rowSeq: 0,
    writeRetryMs: 1_000,
    ...parts,
  });
}

describe('WritePipeline', () => {
  it('loses the store when replaying a committed batch on the local copy throws, failing the batch instead of leaving it pending', async () => {
    const lost: unknown[] = [];
    pipeline = newPipeline({ onLost: (error) => lost.push(error) });
    const batch = pipeline.batch();
    batch.writes.local((): Promise<void> => {
      throw new Error('the environment is closed');
    });
    await expect(batch.done).rejects.toThrow('the environment is closed');
    expect(lost).toHaveLength(1);
    // Every later write fails with it: a later commit could refer to what this one lost.
    await expect(pipeline.batch().done).rejects.toThrow('the environment is closed');
  });

  it('resolves a batch once it committed and its replay on the local copy is done', async () => {
    pipeline = newPipeline();
    const replayed: string[] = [];
    const batch = pipeline.batch();
    batch.writes.local(async () => {
      replayed.push('a');
    });
    await batch.done;
    expect(replayed).toEqual(['a']);
    expect(pipeline.lost).toBeUndefined();
  });
});
