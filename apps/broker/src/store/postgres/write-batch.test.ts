import type { TransactionSql } from 'postgres';
import { describe, expect, it } from 'vitest';
import { WriteBatch } from './write-batch.js';

/** A transaction that records the statements a batch would send, instead of sending them. */
function recordingTransaction() {
  const sent: { text: string; parameters: unknown[] }[] = [];
  const tx = {
    unsafe(text: string, parameters: unknown[], options: { prepare?: boolean }) {
      expect(options.prepare).toBe(true);
      sent.push({ text, parameters });
      return {};
    },
  } as unknown as TransactionSql;
  return { tx, sent };
}

function batchOfMessages(count: number): WriteBatch {
  const batch = new WriteBatch();
  for (let offset = 0; offset < count; offset++) {
    batch.put('messages', ['t', offset, Uint8Array.of(offset % 256, 0x5c, 0x22)], async () => {});
  }
  return batch;
}

describe('WriteBatch', () => {
  it('sends every batch size through the same prepared statement, one array parameter per column', () => {
    // A text per row count made PostgreSQL plan, and both sides keep, one statement per batch size.
    const small = recordingTransaction();
    batchOfMessages(1).statements(small.tx);
    const large = recordingTransaction();
    batchOfMessages(1_000).statements(large.tx);
    expect(small.sent).toHaveLength(1);
    expect(large.sent).toHaveLength(1);
    expect(large.sent[0]?.text).toBe(small.sent[0]?.text);
    expect(large.sent[0]?.parameters).toHaveLength(3);
    expect(large.sent[0]?.parameters[1]).toEqual(Array.from({ length: 1_000 }, (_, offset) => offset));
  });

  it('writes values as a bytea[] literal, each element in hex', () => {
    const { tx, sent } = recordingTransaction();
    batchOfMessages(2).statements(tx);
    expect(sent[0]?.parameters[2]).toBe('{"\\\\x005c22","\\\\x015c22"}');
  });

  it('splits a batch past 5,000 rows into statements of the same text', () => {
    const { tx, sent } = recordingTransaction();
    batchOfMessages(5_001).statements(tx);
    expect(sent).toHaveLength(2);
    expect(sent[1]?.text).toBe(sent[0]?.text);
    expect(sent[1]?.parameters[1]).toEqual([5_000]);
  });
});
