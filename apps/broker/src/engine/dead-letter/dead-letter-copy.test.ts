import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngineHarness, START_MS } from '../engine-test-harness.test-support.js';
import { AppendWaker } from '../log/append-waker.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { copyToDeadLetterQueue, type DeadLetterCopyDeps } from './dead-letter-copy.js';

let h: EngineHarness;
let deps: DeadLetterCopyDeps;
let group: GroupRuntime;
let appendedTo: string[];

const effect = {
  type: 'deadLetter',
  attempts: 3,
  reason: 'poison',
  cause: 'maxRetries',
  firstFailedAtMs: 1_000,
  lastLease: 4,
} as const;

beforeEach(() => {
  h = new EngineHarness('dlqcopy');
  group = h.groups.put('g', {});
  appendedTo = [];
  const appendWaker = new AppendWaker(h.groups, () => false);
  const appended = appendWaker.appended.bind(appendWaker);
  appendWaker.appended = (topic) => {
    appendedTo.push(topic);
    appended(topic);
  };
  deps = { clock: h.clock, topics: h.topics, appendWaker };
});

afterEach(() => h.close());

describe('copyToDeadLetterQueue', () => {
  it('appends a copy to %DLQ%<group>: same content, a new place, where it came from and why (D1)', async () => {
    h.appendMany('t', 2);
    const original = h.append('t', {
      messageId: 'id-2',
      tag: 'red',
      keys: ['k1'],
      messageGroup: 'm',
      properties: { p: 'v' },
      body: new Uint8Array([1, 2, 3]),
      bornAt: 5,
      deliverAt: START_MS,
    });
    h.clock.advanceBy(2_000);
    copyToDeadLetterQueue(deps, group, { group: 'g', topic: 't', offset: original.offset }, effect);
    const copy = h.topics.getMessage('%DLQ%g', 0);
    expect(copy).toEqual({
      messageId: 'id-2',
      tag: 'red',
      keys: ['k1'],
      messageGroup: 'm',
      properties: { p: 'v' },
      body: new Uint8Array([1, 2, 3]),
      bornAt: 5,
      topic: '%DLQ%g',
      offset: 0,
      storedAt: START_MS + 2_000,
      deadLetter: {
        group: 'g',
        originTopic: 't',
        originOffset: 2,
        attempts: 3,
        reason: 'poison',
        deadLetteredAt: START_MS + 2_000,
        cause: 'maxRetries',
        firstFailedAt: 1_000,
        lastLease: 4,
      },
    });
    expect(appendedTo).toEqual(['%DLQ%g']);
    await h.committed();
    const stored = h.store.getMessage('%DLQ%g', 0);
    expect(stored).toMatchObject({ messageId: 'id-2', deadLetter: copy?.deadLetter });
    expect(stored).not.toHaveProperty('deliverAt');
    expect([...(stored?.body ?? [])]).toEqual([1, 2, 3]);
  });

  it('gives each copy the next offset of the DLQ, and replaces the origin of a copy of a copy', () => {
    h.append('t');
    copyToDeadLetterQueue(deps, group, { group: 'g', topic: 't', offset: 0 }, effect);
    // A group consuming another group's DLQ dead-letters one of its messages.
    const other = h.groups.put('ops', {});
    copyToDeadLetterQueue(
      deps,
      other,
      { group: 'ops', topic: '%DLQ%g', offset: 0 },
      { ...effect, attempts: 1 },
    );
    copyToDeadLetterQueue(deps, group, { group: 'g', topic: 't', offset: 0 }, effect);
    expect(h.topics.get('%DLQ%g')?.nextOffset).toBe(2);
    expect(h.topics.getMessage('%DLQ%ops', 0)?.deadLetter).toMatchObject({
      group: 'ops',
      originTopic: '%DLQ%g',
      originOffset: 0,
      attempts: 1,
    });
  });

  it('copies nothing when the message is gone', () => {
    copyToDeadLetterQueue(deps, group, { group: 'g', topic: 't', offset: 9 }, effect);
    expect(h.topics.get('%DLQ%g')).toBeUndefined();
    expect(appendedTo).toEqual([]);
  });
});
