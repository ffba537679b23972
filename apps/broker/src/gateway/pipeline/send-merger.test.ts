import type { OutgoingMessage, SendReceipt } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { SendMerger } from './send-merger.js';

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

describe('SendMerger', () => {
  it('stores the sends of one turn in one call, and answers each with its own receipts in order', async () => {
    const { batches, send } = recordingSend();
    const merger = new SendMerger(send);
    const [first, second, third] = await Promise.all([
      merger.send([message('a')]),
      merger.send([message('b'), message('c')]),
      merger.send([message('d')]),
    ]);
    expect(batches).toEqual([['a', 'b', 'c', 'd']]);
    expect(first?.map((receipt) => receipt.messageId)).toEqual(['a']);
    expect(second?.map((receipt) => receipt.messageId)).toEqual(['b', 'c']);
    expect(third?.map((receipt) => receipt.messageId)).toEqual(['d']);
    // The next turn's send is a batch of its own.
    await merger.send([message('e')]);
    expect(batches).toEqual([['a', 'b', 'c', 'd'], ['e']]);
  });

  it('stores a turn past 1,024 messages in several calls', async () => {
    const { batches, send } = recordingSend();
    const merger = new SendMerger(send);
    const sends = Array.from({ length: 1_500 }, (_, index) => merger.send([message(`m${index}`)]));
    const receipts = await Promise.all(sends);
    expect(batches.map((batch) => batch.length)).toEqual([1_024, 476]);
    expect(receipts.map(([receipt]) => receipt?.messageId)).toEqual(sends.map((_, index) => `m${index}`));
  });

  it('fails every send of a batch whose store call failed', async () => {
    const merger = new SendMerger(() => Promise.reject(new Error('a bug')));
    const outcomes = await Promise.allSettled([merger.send([message('a')]), merger.send([message('b')])]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
  });
});
