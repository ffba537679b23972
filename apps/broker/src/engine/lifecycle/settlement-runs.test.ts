import { afterEach, describe, expect, it } from 'vitest';
import type { DeliveryAddress } from '../../store/records.js';
import { BrokerMetrics } from '../broker-metrics.js';
import { type ClusteringParts, EngineHarness, groupMetric } from '../engine-test-harness.test-support.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { encodeReceiptHandle } from './receipt-handle.js';
import type { SettleItem, SettleVerb } from './settle-item.js';

/**
 * Issue 43: a settle frame is settled by runs — consecutive items of one group and topic with
 * rising offsets, decided by core in one step — and every item's answer, every record, counter,
 * mark, history entry and metric must be what settling the items one by one gave. Two brokers
 * lease the same messages the same way; one settles the frame whole, the other item by item.
 */

interface Side {
  readonly h: EngineHarness;
  readonly metrics: BrokerMetrics;
  readonly parts: ClusteringParts;
  readonly g: GroupRuntime;
  readonly g2: GroupRuntime;
  /** The receipt handles of the leases made, by name. */
  readonly handles: Map<string, string>;
}

const sides: Side[] = [];

afterEach(async () => {
  for (const { h, parts } of sides.splice(0)) {
    parts.scheduler.stop();
    parts.pushLeases.stop();
    await h.close();
  }
});

/**
 * A broker with group `g` (history of failures only, its cursor on `t` stored, so that its
 * successes are marks) and `g2` (full history), and leases: `p0`–`p7` push leases of `g`, `s8` and
 * `s9` simple leases of `g`, `q10` and `q11` push leases of `g2`.
 */
function side(name: string): Side {
  const h = new EngineHarness(name);
  const metrics = new BrokerMetrics({ groupGauges: () => [] });
  const parts = h.clustering(metrics);
  const config = { retryPolicy: { type: 'fixed', delayMs: 5_000 }, maxRetries: 1 } as const;
  const g = h.groups.put('g', config);
  const g2 = h.groups.put('g2', { ...config, history: 'full' });
  h.groups.saveCursor(g, 't', 0);
  const handles = new Map<string, string>();
  const lease = (group: GroupRuntime, key: string, consumer: 'push' | 'simple') => {
    const message = h.append('t');
    const address: DeliveryAddress = { group: group.name, topic: 't', offset: message.offset };
    const target = { address, message, record: undefined };
    const delivered =
      consumer === 'push'
        ? parts.leaseGrant.toPush(group, target, 1, 'c1')
        : parts.leaseGrant.toSimple(group, target, 10_000, 's1');
    if (!delivered) throw new Error(`${key} not delivered`);
    handles.set(key, delivered.receiptHandle);
  };
  for (let i = 0; i < 8; i++) lease(g, `p${i}`, 'push');
  lease(g, 's8', 'simple');
  lease(g, 's9', 'simple');
  // g2 leases offsets 10 and 11 of the same topic; g has no record there.
  lease(g2, 'q10', 'push');
  lease(g2, 'q11', 'push');
  const made = { h, metrics, parts, g, g2, handles };
  sides.push(made);
  return made;
}

/** The frame's items, from the handles' names; `stale:` and `@` name altered handles. */
function frame(s: Side, spec: readonly (string | SettleItem)[]): SettleItem[] {
  return spec.map((entry) => {
    if (typeof entry !== 'string') {
      const receiptHandle = s.handles.get(entry.receiptHandle) ?? entry.receiptHandle;
      return { ...entry, receiptHandle };
    }
    if (entry.startsWith('stale:')) {
      const offset = Number(entry.slice('stale:'.length));
      return {
        receiptHandle: encodeReceiptHandle({ kind: 'clustering', group: 'g', topic: 't', offset, lease: 7 }),
      };
    }
    return { receiptHandle: s.handles.get(entry) ?? entry };
  });
}

async function outcomeOf(
  s: Side,
  failures: readonly { index: number; error: { code: number; message: string } }[],
) {
  s.parts.applier.flushTurn();
  await s.h.committed();
  const states: unknown[] = [];
  for (const group of ['g', 'g2']) {
    for (let offset = 0; offset < 12; offset++)
      states.push(s.parts.records.get({ group, topic: 't', offset })?.state);
  }
  const history = [];
  for (let offset = 0; offset < 12; offset++) history.push(s.h.store.readHistory(`t-${offset}`));
  const counters = [s.g, s.g2].map((g) => [g.inflight, g.waitingRetry, g.committed, g.deadLettered]);
  return {
    failures: failures.map(({ index, error }) => ({ index, code: error.code, message: error.message })),
    states,
    history,
    counters,
    marks: s.g.settledMarks.get('t')?.toFlat(),
    stored: s.h.store.listCursors(),
    dlq: s.h.topics.getMessage('%DLQ%g', 0)?.deadLetter,
    acked: await groupMetric(s.metrics, 'ricochet_messages_acked_total'),
    deadLettered: await groupMetric(s.metrics, 'ricochet_messages_dead_lettered_total'),
  };
}

/** Settle `spec` as one frame on one broker and item by item on another; both must agree. */
async function expectRunsAsOneByOne(verb: SettleVerb, spec: readonly (string | SettleItem)[]) {
  const whole = side('settle-runs-whole');
  const single = side('settle-runs-single');
  const wholeFailures = whole.parts.settlement.settle(frame(whole, spec), verb);
  const singleFailures = frame(single, spec).flatMap((item, index) =>
    single.parts.settlement.settle([item], verb).map((failure) => ({ ...failure, index })),
  );
  const outcome = await outcomeOf(whole, wholeFailures);
  expect(outcome).toEqual(await outcomeOf(single, singleFailures));
  return outcome;
}

describe('Settlement by runs (issue 43)', () => {
  it('acks a frame by runs exactly as one by one: refusals, records, counters, marks, history', async () => {
    const outcome = await expectRunsAsOneByOne('ack', [
      'p0',
      'p1',
      'p2',
      'garbage',
      'p3',
      // Again, in the same frame: the run ends there, and the repeat is unknown (settled already).
      'p3',
      'stale:4',
      'p5',
      // The group's simple leases, in the same run of offsets: another machine decides them.
      's8',
      's9',
      // Another group on the same topic, then back.
      'q10',
      'p6',
      'q11',
      'B~g~YQ~t~7~1',
      `${encodeReceiptHandle({ kind: 'clustering', group: 'g', topic: 't', offset: 7, lease: 1 })}@2`,
      encodeReceiptHandle({ kind: 'clustering', group: 'g', topic: 't', offset: 42, lease: 1 }),
    ]);
    expect(outcome.failures.map((f) => [f.index, f.code])).toEqual([
      [3, 410],
      [5, 410],
      [6, 410],
      [13, 410],
      [14, 410],
      [15, 410],
    ]);
    // g keeps no history of successes: its acks are marks, written with its stored cursor.
    expect(outcome.marks).toEqual([0, 4, 5, 7, 8, 10]);
    expect(outcome.counters).toEqual([
      [2, 0, 8, 0],
      [0, 0, 2, 0],
    ]);
    expect(outcome.acked).toBe(8);
  });

  it('nacks a frame by runs exactly as one by one: retries, dead-letters, postponements, refusals', async () => {
    const outcome = await expectRunsAsOneByOne('nack', [
      { receiptHandle: 'p0', reason: 'boom' },
      { receiptHandle: 'p1', retryAfterMs: 700 },
      { receiptHandle: 'p2', deadLetter: true, reason: 'poison' },
      { receiptHandle: 'p3', deadLetter: true, nonRetryable: true },
      { receiptHandle: 'p4', postpone: true, retryAfterMs: 300 },
      { receiptHandle: 'p5', retryAfterMs: -1 },
      // A simple lease is dead-lettered on request, and a plain nack of one is refused (400).
      { receiptHandle: 's8', deadLetter: true },
      { receiptHandle: 's9', reason: 'no' },
      { receiptHandle: 'q10', reason: 'other group' },
    ]);
    expect(outcome.failures.map((f) => [f.index, f.code])).toEqual([
      [5, 400],
      [7, 400],
    ]);
    expect(outcome.counters).toEqual([
      [4, 3, 0, 3],
      [1, 1, 0, 0],
    ]);
    expect(outcome.deadLettered).toBe(3);
  });

  it('releases a frame by runs exactly as one by one', async () => {
    const outcome = await expectRunsAsOneByOne('release', ['p0', 'p1', 'p1', 's8', 'p2', 'q10']);
    // The second p1 is stale; the simple lease s8 is released too (handed back unreceived).
    expect(outcome.failures.map((f) => [f.index, f.code])).toEqual([[2, 410]]);
  });
  it('records each settle of a run at the instant its retry was drawn from, however long the run takes', async () => {
    const s = side('settle-runs-instant');
    // A millisecond passes at every reading of the clock, as on a busy loop while a run is applied.
    const read = s.h.clock.now.bind(s.h.clock);
    s.h.clock.now = () => {
      const at = read();
      s.h.clock.advanceBy(1);
      return at;
    };
    expect(s.parts.settlement.settle(frame(s, ['q10', 'q11']), 'nack')).toEqual([]);
    s.parts.applier.flushTurn();
    await s.h.committed();
    for (const offset of [10, 11]) {
      const state = s.parts.records.get({ group: 'g2', topic: 't', offset })?.state;
      if (state?.state !== 'waitingRetry') throw new Error(`offset ${offset} is not waiting for its retry`);
      const [entry] = s.h.store.readHistory(`t-${offset}`) as { settledAt: number }[];
      // The group's fixed 5 s, counted from the instant the history says the nack was made.
      expect(state.retryAtMs - (entry?.settledAt ?? 0)).toBe(5_000);
    }
  });
});
