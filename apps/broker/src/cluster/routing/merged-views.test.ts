import { describe, expect, it } from 'vitest';
import type { DeadLetterPage } from '../../engine/index.js';
import type { StoredMessage } from '../../store/records.js';
import { deadLetterStarts, mergeDeadLetterPages } from './merged-views.js';

const QUEUES = 2;

/** A DLQ of two queues, each a list of its copies by queue offset. */
function copiesOf(queue: number, count: number): StoredMessage[] {
  return Array.from({ length: count }, (_, offset) => ({
    messageId: `q${queue}-${offset}`,
    topic: '%DLQ%billing',
    offset,
    body: new Uint8Array(0),
    bornAt: 0,
    storedAt: 0,
    deadLetter: {
      group: 'billing',
      originTopic: 'orders',
      originOffset: offset,
      attempts: 1,
      reason: 'poison',
      deadLetteredAt: 0,
      lastLease: 0,
    },
  })) as StoredMessage[];
}

/**
 * A queue's page from `from`: up to `limit` copies, or only `cut` of them when its owner cut the
 * page to fit a frame (`QUEUE_ADMIN_CALLS.listDeadLetters`), with the cursor at the first left out.
 */
function pageOf(copies: readonly StoredMessage[], from: number, limit: number, cut?: number): DeadLetterPage {
  const rest = copies.filter((copy) => copy.offset >= from);
  const kept = rest.slice(0, Math.min(limit, cut ?? limit));
  const next = rest[kept.length];
  return { messages: kept, cursor: next === undefined ? null : next.offset };
}

describe('mergeDeadLetterPages', () => {
  it("lists every copy once, in order, when a queue's owner cuts its pages short", () => {
    const dlq = [copiesOf(0, 6), copiesOf(1, 6)];
    const listed: string[] = [];
    let cursor: number | null = 0;
    for (let page = 0; cursor !== null && page < 20; page++) {
      const starts = deadLetterStarts(cursor, QUEUES);
      // Queue 0's owner fits two copies in a frame; queue 1 answers in full.
      const pages = [pageOf(dlq[0] ?? [], starts[0] ?? 0, 5, 2), pageOf(dlq[1] ?? [], starts[1] ?? 0, 5)];
      const merged = mergeDeadLetterPages(pages, QUEUES, 5);
      expect(merged.messages.length).toBeGreaterThan(0);
      listed.push(...merged.messages.map((message) => message.messageId));
      cursor = merged.cursor;
    }
    expect(cursor).toBeNull();
    // Topic order: queue offsets interleaved, q0 first at each.
    const expected = Array.from({ length: 6 }, (_, offset) => [`q0-${offset}`, `q1-${offset}`]).flat();
    expect(listed).toEqual(expected);
  });

  it("stops a page below a cut queue's cursor, with the cursor where the next page starts", () => {
    const merged = mergeDeadLetterPages(
      [pageOf(copiesOf(0, 6), 0, 5, 2), pageOf(copiesOf(1, 6), 0, 5)],
      QUEUES,
      5,
    );
    // Queue 0 resumes at its offset 2 (topic offset 4): queue 1's copies past it wait.
    expect(merged.messages.map((message) => message.offset)).toEqual([0, 1, 2, 3]);
    expect(merged.cursor).toBe(4);
  });
});
