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

  it('makes a batch one statement led by the fence, its writes numbered on from the fence parameters', () => {
    const batch = new WriteBatch();
    batch.delete('messages', ['t', 0], async () => {});
    batch.put('messages', ['t', 1, Uint8Array.of(1)], async () => {});
    batch.put('topics', ['t', Uint8Array.of(2)], async () => {});
    const fence = { text: 'select ricochet_fence($1::bigint, $2::bigint)', parameters: [7, 3_000] };
    const statement = batch.fencedStatement(fence);
    // The fence is the main query: PostgreSQL runs it first, and the WITH writes after it, all or
    // none. Its second column reads the numbers the messages' upsert (w2) took, after the fence.
    expect(statement?.text.startsWith('with w0 as (insert into ricochet_topics ')).toBe(true);
    expect(
      statement?.text.endsWith(
        ') select ricochet_fence($1::bigint, $2::bigint), greatest((select max(seq) from w2))::text as seq',
      ),
    ).toBe(true);
    expect(statement?.text).toContain('returning seq) select ricochet_fence(');
    expect(statement?.text.match(/ w\d as \(/g)).toHaveLength(3);
    // Every parameter is referenced once: 2 for the fence, 2 for topics, then 2 + 3 for messages.
    const referenced = [...(statement?.text.matchAll(/\$(\d+)::/g) ?? [])].map((match) => Number(match[1]));
    expect([...referenced].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Tables in one fixed order, kinds deletes first: the same text whatever order the writes came in.
    expect(statement?.parameters).toEqual([
      7,
      3_000,
      '{"t"}',
      '{"\\\\x02"}',
      '{"t"}',
      '{0}',
      '{"t"}',
      '{1}',
      '{"\\\\x01"}',
    ]);
    const reordered = new WriteBatch();
    reordered.put('topics', ['u', Uint8Array.of(2)], async () => {});
    reordered.put('messages', ['u', 1, Uint8Array.of(1)], async () => {});
    reordered.delete('messages', ['u', 0], async () => {});
    expect(reordered.fencedStatement(fence)?.text).toBe(statement?.text);
    // The same text for any number of rows: prepared once per connection.
    expect(batchOfMessages(1_000).fencedStatement(fence)?.text).toBe(
      batchOfMessages(1).fencedStatement(fence)?.text,
    );
    // Only the fence when the batch holds no row (writes to the local copy only).
    const local = new WriteBatch();
    local.local(async () => {});
    expect(local.fencedStatement(fence)).toEqual({ text: fence.text, parameters: [7, 3_000] });
  });

  it('has the numbered upserts of a transaction answer the highest number they took', () => {
    const { tx, sent } = recordingTransaction();
    const batch = new WriteBatch();
    batch.put('topics', ['t', Uint8Array.of(2)], async () => {});
    batch.put('history', ['m', 'g', '', 1, 't', 0, Uint8Array.of(3)], async () => {});
    batch.statements(tx);
    const texts = sent.map((statement) => statement.text);
    expect(texts.find((text) => text.includes('ricochet_topics'))).not.toContain('seq');
    const history = texts.find((text) => text.includes('ricochet_history'));
    expect(history?.startsWith('with written as (insert into ricochet_history ')).toBe(true);
    expect(history?.endsWith(' returning seq) select max(seq)::text as seq from written')).toBe(true);
  });

  it('gives what it writes of the followed tables, for the standbys’ feed', () => {
    const batch = new WriteBatch();
    batch.put('messages', ['t', 1, Uint8Array.of(1)], async () => {});
    batch.put('messages', ['t', 1, Uint8Array.of(9)], async () => {});
    batch.put('messages', ['t', 2, Uint8Array.of(2)], async () => {});
    batch.put('history', ['m', 'g', '', 1, 't', 0, Uint8Array.of(3)], async () => {});
    batch.put('topics', ['t', Uint8Array.of(4)], async () => {});
    batch.expire({ topic: 'u', offset: 0, messageId: 'x' }, async () => {});
    // The last write of each key, as the transaction writes it; other tables are not followed.
    expect(batch.followedWrites()).toEqual({
      expired: [{ topic: 'u', offset: 0, messageId: 'x' }],
      messages: [Uint8Array.of(9), Uint8Array.of(2)],
      history: [['m', Uint8Array.of(3)]],
    });
  });

  it('leaves a batch with retention deletes, or past 5,000 rows of one table, to a transaction', () => {
    const fence = { text: 'select ricochet_fence($1::bigint, $2::bigint)', parameters: [1, 1] };
    expect(batchOfMessages(5_000).fencedStatement(fence)).toBeDefined();
    expect(batchOfMessages(5_001).fencedStatement(fence)).toBeUndefined();
    const expiring = batchOfMessages(1);
    expiring.expire({ topic: 't', offset: 0, messageId: 'm' }, async () => {});
    expect(expiring.fencedStatement(fence)).toBeUndefined();
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
