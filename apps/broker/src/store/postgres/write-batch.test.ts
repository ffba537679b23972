import type { TransactionSql } from 'postgres';
import { describe, expect, it } from 'vitest';
import type { BrokerStore } from '../broker-store.js';
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
    expect(large.sent[0]?.parameters[1]).toBe(
      `{${Array.from({ length: 1_000 }, (_, offset) => offset).join(',')}}`,
    );
  });

  it('writes each column as an array literal: text quoted and escaped, values in hex', () => {
    const { tx, sent } = recordingTransaction();
    const batch = new WriteBatch();
    batch.put('messages', ['plain', 0, Uint8Array.of(0x00, 0x5c, 0x22)], async () => {});
    batch.put('messages', ['a"b\\c', 1, Uint8Array.of(0xff)], async () => {});
    batch.put('messages', ['', 2, Uint8Array.of()], async () => {});
    batch.statements(tx);
    expect(sent[0]?.parameters).toEqual([
      '{"plain","a\\"b\\\\c",""}',
      '{0,1,2}',
      '{"\\\\x005c22","\\\\xff","\\\\x"}',
    ]);
  });

  it('splits a batch past 5,000 rows into statements of the same text', () => {
    const { tx, sent } = recordingTransaction();
    batchOfMessages(5_001).statements(tx);
    expect(sent).toHaveLength(2);
    expect(sent[1]?.text).toBe(sent[0]?.text);
    expect(sent[1]?.parameters[1]).toBe('{5000}');
  });

  it('replays a committed batch on the local copy in call order, yielding the loop once a turn took 1 ms', async () => {
    const applied: number[] = [];
    const batch = new WriteBatch();
    for (let index = 0; index < 200; index++) {
      batch.put('topics', [`t${index}`, Uint8Array.of(index)], async () => void applied.push(index));
    }
    const mirror = {} as BrokerStore;
    let appliedWhenLoopRan = -1;
    setImmediate(() => {
      appliedWhenLoopRan = applied.length;
    });
    let now = 0;
    // Each reading of the clock (one per 64 writes) finds another millisecond gone.
    await batch.applyTo(mirror, () => now++);
    expect(appliedWhenLoopRan).toBe(64);
    expect(applied).toEqual(Array.from({ length: 200 }, (_, index) => index));

    const quick = new WriteBatch();
    let quickApplied = 0;
    for (let index = 0; index < 200; index++)
      quick.put('topics', [`t${index}`, Uint8Array.of(1)], async () => void quickApplied++);
    let quickWhenLoopRan = -1;
    setImmediate(() => {
      quickWhenLoopRan = quickApplied;
    });
    await quick.applyTo(mirror, () => 0);
    expect(quickWhenLoopRan).toBe(-1);
    expect(quickApplied).toBe(200);
  });
});
