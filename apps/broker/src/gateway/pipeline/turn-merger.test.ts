import type { OutgoingMessage, SendReceipt } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { failuresOf, sliceOf, TurnMerger } from './turn-merger.js';

const message = (messageId: string): OutgoingMessage => ({
  topic: 'orders',
  messageId,
  body: new Uint8Array(),
  bornAt: 0,
});

/** An engine `send` that records its batches and answers each message with its id and position. */
function recordingSend() {
  const batches: string[][] = [];
  const send = (messages: readonly OutgoingMessage[]): Promise<SendReceipt[]> => {
    batches.push(messages.map((each) => each.messageId));
    return Promise.resolve(
      messages.map((each, offset) => ({
        ok: true as const,
        messageId: each.messageId,
        offset,
        duplicate: false,
      })),
    );
  };
  return { batches, send };
}

describe('TurnMerger', () => {
  it('carries out the calls of one turn in one call, and answers each with its own share in order', async () => {
    const { batches, send } = recordingSend();
    const merger = new TurnMerger(send, sliceOf);
    const [first, second, third] = await Promise.all([
      merger.submit([message('a')]),
      merger.submit([message('b'), message('c')]),
      merger.submit([message('d')]),
    ]);
    expect(batches).toEqual([['a', 'b', 'c', 'd']]);
    expect(first?.map((receipt) => receipt.messageId)).toEqual(['a']);
    expect(second?.map((receipt) => receipt.messageId)).toEqual(['b', 'c']);
    expect(third?.map((receipt) => receipt.messageId)).toEqual(['d']);
    // The next turn's call is a batch of its own.
    await merger.submit([message('e')]);
    expect(batches).toEqual([['a', 'b', 'c', 'd'], ['e']]);
  });

  it('carries out a turn past 1,024 items in several calls', async () => {
    const { batches, send } = recordingSend();
    const merger = new TurnMerger(send, sliceOf);
    const sends = Array.from({ length: 1_500 }, (_, index) => merger.submit([message(`m${index}`)]));
    const receipts = await Promise.all(sends);
    expect(batches.map((batch) => batch.length)).toEqual([1_024, 476]);
    expect(receipts.map(([receipt]) => receipt?.messageId)).toEqual(sends.map((_, index) => `m${index}`));
  });

  it('gives each call the failures of its own items, indexed from its first', async () => {
    // A settle answers only its failures: here every handle that starts with `x`.
    const settle = (handles: readonly string[]) =>
      Promise.resolve(
        handles.flatMap((handle, index) => (handle.startsWith('x') ? [{ index, error: handle }] : [])),
      );
    const merger = new TurnMerger(settle, failuresOf);
    const answers = await Promise.all([
      merger.submit(['a', 'x1']),
      merger.submit(['b']),
      merger.submit(['x2', 'c', 'x3']),
    ]);
    expect(answers).toEqual([
      [{ index: 1, error: 'x1' }],
      [],
      [
        { index: 0, error: 'x2' },
        { index: 2, error: 'x3' },
      ],
    ]);
  });

  it('fails every call of a batch whose service call failed', async () => {
    const merger = new TurnMerger<OutgoingMessage, SendReceipt[]>(
      () => Promise.reject(new Error('a bug')),
      sliceOf,
    );
    const outcomes = await Promise.allSettled([merger.submit([message('a')]), merger.submit([message('b')])]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
  });
});
