import type { SettledFrame } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import {
  type BatchOutcome,
  type PendingResult,
  ResultBatcher,
  type ResultBatcherOptions,
  type ResultFrame,
} from './result-batcher.js';

interface Result extends PendingResult {
  readonly live?: boolean;
}

/** A batcher whose frames are answered by the test. */
function createBatcher(overrides: Partial<ResultBatcherOptions<Result>> = {}) {
  const sent: { frame: ResultFrame; answer: (frame: SettledFrame | Error) => void }[] = [];
  const settled: [string[], BatchOutcome][] = [];
  const handedOver: string[][] = [];
  let waiter: (() => void) | undefined;
  const batcher = new ResultBatcher<Result>({
    flushDelayMs: 1,
    maxBatchSize: 3,
    send: (frame) =>
      new Promise((resolve, reject) => {
        sent.push({
          frame,
          answer: (answer) => (answer instanceof Error ? reject(answer) : resolve(answer)),
        });
        waiter?.();
      }),
    isSendable: (result) => result.live !== false,
    onSent: (results) => handedOver.push(results.map((result) => result.receiptHandle)),
    onSettled: (results, outcome) => settled.push([results.map((result) => result.receiptHandle), outcome]),
    ...overrides,
  });
  /** Resolves once `count` frames have been sent in all. */
  const framesSent = async (count: number): Promise<ResultFrame[]> => {
    while (sent.length < count) await new Promise<void>((resolve) => (waiter = resolve));
    return sent.map((entry) => entry.frame);
  };
  return { batcher, sent, settled, handedOver, framesSent };
}

const answer = (failures: SettledFrame['failures'] = []): SettledFrame => ({
  type: 'settled',
  id: 0,
  failures,
});

describe('ResultBatcher', () => {
  it('sends the results queued within the flush delay together, one frame per action', async () => {
    const { batcher, framesSent } = createBatcher({ maxBatchSize: 100 });
    batcher.add({ action: 'ack', receiptHandle: 'h1' });
    batcher.add({ action: 'nack', receiptHandle: 'h2', reason: 'boom' });
    batcher.add({ action: 'ack', receiptHandle: 'h3' });
    batcher.add({ action: 'nack', receiptHandle: 'h4', reason: 'later', retryAfterMs: 5_000 });
    batcher.add({ action: 'release', receiptHandle: 'h5' });
    expect(await framesSent(3)).toEqual([
      { type: 'ack', receiptHandles: ['h1', 'h3'] },
      {
        type: 'nack',
        items: [
          { receiptHandle: 'h2', reason: 'boom' },
          { receiptHandle: 'h4', reason: 'later', retryAfterMs: 5_000 },
        ],
      },
      { type: 'release', receiptHandles: ['h5'] },
    ]);
  });

  it('sends a full batch at once, without waiting for the delay', () => {
    const { batcher, sent } = createBatcher({ maxBatchSize: 3, flushDelayMs: 60_000 });
    for (const handle of ['a', 'b', 'c', 'd']) batcher.add({ action: 'ack', receiptHandle: handle });
    expect(sent.map((entry) => entry.frame)).toEqual([{ type: 'ack', receiptHandles: ['a', 'b', 'c'] }]);
    batcher.flush();
    expect(sent.map((entry) => entry.frame)).toEqual([
      { type: 'ack', receiptHandles: ['a', 'b', 'c'] },
      { type: 'ack', receiptHandles: ['d'] },
    ]);
    batcher.close();
  });

  it('sends the rest of the queue with a full batch, acks first, since its delay is nearly over anyway', () => {
    const { batcher, sent } = createBatcher({ maxBatchSize: 2, flushDelayMs: 60_000 });
    batcher.add({ action: 'release', receiptHandle: 'r' });
    batcher.add({ action: 'ack', receiptHandle: 'a' });
    expect(sent).toEqual([]);
    batcher.add({ action: 'release', receiptHandle: 's' });
    expect(sent.map((entry) => entry.frame)).toEqual([
      { type: 'ack', receiptHandles: ['a'] },
      { type: 'release', receiptHandles: ['r', 's'] },
    ]);
    expect(batcher.pendingCount).toBe(3);
    batcher.close();
  });

  it('hands each batch to onSent as it is sent, before any answer', () => {
    const { batcher, sent, settled, handedOver } = createBatcher({ maxBatchSize: 2, flushDelayMs: 60_000 });
    for (const handle of ['a', 'b', 'c']) batcher.add({ action: 'ack', receiptHandle: handle });
    batcher.flush();
    expect(sent).toHaveLength(2);
    expect(handedOver).toEqual([['a', 'b'], ['c']]);
    expect(settled).toEqual([]);
    batcher.close();
  });

  it('drops results that are no longer sendable when their batch goes', () => {
    const { batcher, sent } = createBatcher();
    batcher.add({ action: 'ack', receiptHandle: 'stale', live: false });
    batcher.add({ action: 'release', receiptHandle: 'stale-too', live: false });
    batcher.add({ action: 'ack', receiptHandle: 'fresh' });
    batcher.flush();
    expect(sent.map((entry) => entry.frame)).toEqual([{ type: 'ack', receiptHandles: ['fresh'] }]);
  });

  it("reports each batch's outcome with its results in frame order", async () => {
    const { batcher, sent, settled } = createBatcher();
    batcher.add({ action: 'ack', receiptHandle: 'h1' });
    batcher.add({ action: 'ack', receiptHandle: 'h2' });
    batcher.add({ action: 'nack', receiptHandle: 'h3' });
    batcher.flush();
    const failure = { index: 1, code: 410, message: 'expired' };
    sent[0]?.answer(answer([failure]));
    const lost = new Error('connection closed');
    sent[1]?.answer(lost);
    await batcher.idle();
    expect(settled).toEqual([
      [['h1', 'h2'], { failures: [failure] }],
      [['h3'], { error: lost }],
    ]);
  });

  it('is idle once nothing is queued or unanswered; close() drops the queue', async () => {
    const { batcher, sent } = createBatcher({ flushDelayMs: 60_000 });
    await batcher.idle();
    batcher.add({ action: 'ack', receiptHandle: 'h1' });
    batcher.flush();
    batcher.add({ action: 'ack', receiptHandle: 'queued' });
    expect(batcher.pendingCount).toBe(2);
    let idle = false;
    const becameIdle = batcher.idle().then(() => {
      idle = true;
    });
    batcher.close();
    expect(batcher.pendingCount).toBe(1);
    await Promise.resolve();
    expect(idle).toBe(false);
    sent[0]?.answer(answer());
    await becameIdle;
    batcher.add({ action: 'ack', receiptHandle: 'after-close' });
    expect(batcher.pendingCount).toBe(0);
    expect(sent).toHaveLength(1);
  });
});
