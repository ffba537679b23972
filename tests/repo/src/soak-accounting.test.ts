import { describe, expect, it } from 'vitest';
import {
  accountSoak,
  downtimeWithin,
  type GroupObservation,
  type SoakObservations,
  soakFailures,
} from '../../../bench/src/soak/accounting.js';
import { parseSoakOptions } from '../../../bench/src/soak/soak-options.js';

/**
 * `pnpm soak` is not part of the suite (it runs for minutes), but its checker is: fed runs that
 * went wrong, the accounting must say so, or a PASS from the soak means nothing.
 */

const log = (...ids: string[]) => ids.map((messageId, offset) => ({ messageId, offset }));

function group(
  name: string,
  delivered: Record<string, number[]>,
  stats: Record<string, number>,
): GroupObservation {
  const offsetsById = new Map(Object.entries(delivered).map(([id, offsets]) => [id, new Set(offsets)]));
  const deliveries = Object.values(delivered).reduce((sum, offsets) => sum + offsets.length, 0);
  return { name, deliveries, offsetsById, requestedRedeliveries: 0, stats };
}

const settled = (committed: number) => ({ ready: 0, inflight: 0, waitingRetry: 0, dlq: 0, committed });

/** Three messages sent, acknowledged, stored once, each delivered once to one group that committed them. */
function cleanRun(): SoakObservations {
  return {
    sent: 3,
    acknowledged: new Map([
      ['a', 0],
      ['b', 1],
      ['c', 2],
    ]),
    stored: log('a', 'b', 'c'),
    deadLetterLogs: new Map([['%DLQ%g', log('b')]]),
    groups: [group('g', { a: [0], b: [1], c: [2] }, settled(3))],
    retries: [],
    downtime: [],
  };
}

describe('soak accounting', () => {
  it('passes a clean run and counts it', () => {
    const report = accountSoak(cleanRun());
    expect(soakFailures(report)).toEqual([]);
    expect(report).toMatchObject({ sent: 3, acknowledged: 3, stored: 3, lost: [], storedTwice: [] });
    expect(report.groups[0]).toMatchObject({ committed: 3, received: 3, redelivered: 0, leftOver: 0 });
  });

  it('flags an acknowledged message the store does not hold as lost, and fails the run', () => {
    const run = { ...cleanRun(), stored: log('a', 'b') };
    const report = accountSoak(run);
    expect(report.lost).toEqual(['c']);
    expect(soakFailures(report).join('\n')).toMatch(/1 lost: c/);
  });

  it('flags an acknowledged message whose receipt offset holds another message as lost', () => {
    const run = { ...cleanRun(), stored: log('a', 'c', 'b') };
    expect(accountSoak(run).lost).toEqual(['b', 'c']);
  });

  it('flags an id stored at two offsets of the origin topic or of a DLQ topic', () => {
    const twiceInOrigin = { ...cleanRun(), stored: log('a', 'b', 'c', 'b') };
    expect(accountSoak(twiceInOrigin).storedTwice).toEqual(['origin/b']);
    expect(soakFailures(accountSoak(twiceInOrigin)).join('\n')).toMatch(/stored twice/);
    const twiceInDlq = { ...cleanRun(), deadLetterLogs: new Map([['%DLQ%g', log('b', 'b')]]) };
    expect(accountSoak(twiceInDlq).storedTwice).toEqual(['%DLQ%g/b']);
  });

  it('counts a delivery at an offset the store does not hold as a lost-before-commit delivery, not a failure', () => {
    // `c` was delivered at offset 3 before its commit, the crash lost it, the retry stored it at 2.
    const run = { ...cleanRun(), groups: [group('g', { a: [0], b: [1], c: [3, 2] }, settled(3))] };
    const report = accountSoak(run);
    expect(report.phantomDeliveries).toBe(1);
    expect(report.storedTwice).toEqual([]);
    expect(report.groups[0]?.redelivered).toBe(1);
    expect(soakFailures(report)).toEqual([]);
  });

  it('fails a group that never received an acknowledged message, miscounts commits or has work left', () => {
    const missing = { ...cleanRun(), groups: [group('g', { a: [0], b: [1] }, settled(3))] };
    expect(soakFailures(accountSoak(missing)).join('\n')).toMatch(/g: 1 acknowledged but never received: c/);
    const miscounted = { ...cleanRun(), groups: [group('g', { a: [0], b: [1], c: [2] }, settled(4))] };
    expect(soakFailures(accountSoak(miscounted)).join('\n')).toMatch(/g: committed 4 but 3 stored/);
    const waiting = {
      ...cleanRun(),
      groups: [group('g', { a: [0], b: [1], c: [2] }, { ...settled(3), waitingRetry: 1 })],
    };
    expect(soakFailures(accountSoak(waiting)).join('\n')).toMatch(/g: 1 messages not settled/);
  });

  it('measures retry lateness from failure + delay, without the time the broker was down', () => {
    const retries = [
      // Due at 500, arrived at 3,000; the broker was down 1,000–2,800: 700 ms late, not late.
      { failedAtMs: 0, delayMs: 500, redeliveredAtMs: 3_000 },
      // Due at 10,500, arrived at 12,000 with no downtime in between: 1,500 ms late.
      { failedAtMs: 10_000, delayMs: 500, redeliveredAtMs: 12_000 },
      // Early (a release after a crash lost the failure): negative lateness.
      { failedAtMs: 20_000, delayMs: 500, redeliveredAtMs: 20_100 },
    ];
    const report = accountSoak({ ...cleanRun(), retries, downtime: [{ fromMs: 1_000, toMs: 2_800 }] });
    expect(report.retriesMeasured).toBe(3);
    expect(report.lateRetries).toBe(1);
    expect(report.lateRetriesAcrossRestart).toBe(0);
    expect(report.retryLatenessMaxMs).toBe(1_500);
    expect(report.kills).toBe(1);
    expect(report.downtimeMs).toBe(1_800);
  });

  it('tells late retries with a kill between failure and redelivery from the others', () => {
    const retries = [
      { failedAtMs: 0, delayMs: 500, redeliveredAtMs: 3_000 },
      { failedAtMs: 10_000, delayMs: 500, redeliveredAtMs: 12_000 },
    ];
    const report = accountSoak({ ...cleanRun(), retries, downtime: [{ fromMs: 1_000, toMs: 1_100 }] });
    expect(report.lateRetries).toBe(2);
    expect(report.lateRetriesAcrossRestart).toBe(1);
  });

  it('counts only the part of a downtime inside the span', () => {
    const downtime = [
      { fromMs: 0, toMs: 100 },
      { fromMs: 150, toMs: 250 },
      { fromMs: 400, toMs: 500 },
    ];
    expect(downtimeWithin(downtime, 50, 200)).toBe(100);
    expect(downtimeWithin(downtime, 260, 390)).toBe(0);
    expect(downtimeWithin(downtime, 0, 1_000)).toBe(300);
  });
});

describe('pnpm soak options', () => {
  it('defaults to about a minute on the embedded store, and takes --duration, --kills, --life and --store', () => {
    expect(parseSoakOptions([])).toEqual({
      durationS: 60,
      maxKills: Number.POSITIVE_INFINITY,
      meanLifeMs: 2_500,
      store: 'lmdb',
      storeQueues: 1,
    });
    expect(
      parseSoakOptions(['--duration', '660', '--kills', '30', '--life', '1000', '--store', 'postgres']),
    ).toEqual({
      durationS: 660,
      maxKills: 30,
      meanLifeMs: 1_000,
      store: 'postgres',
      storeQueues: 1,
    });
    expect(parseSoakOptions(['--store', 'postgres', '--store-queues', '4']).storeQueues).toBe(4);
    expect(() => parseSoakOptions(['--store-queues', '4'])).toThrow(/add --store postgres/);
    expect(() => parseSoakOptions(['--store', 'postgres', '--store-queues', '1.5'])).toThrow(
      /unknown option/,
    );
    expect(() => parseSoakOptions(['--store', 'sqlite'])).toThrow(/--store takes lmdb or postgres/);
  });

  it('refuses an unknown option or a value that is not a positive number', () => {
    expect(() => parseSoakOptions(['--minutes', '5'])).toThrow(/unknown option --minutes/);
    expect(() => parseSoakOptions(['--duration', 'soon'])).toThrow(/--duration needs a positive number/);
    expect(() => parseSoakOptions(['--kills'])).toThrow(/--kills needs a positive number/);
  });
});
