import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BroadcastInstance, heldKey } from '../broadcast/broadcast-instance.js';
import { EngineHarness, heldDelivery } from '../engine-test-harness.test-support.js';
import { describeGroup, groupStatsOf } from './group-view.js';

let h: EngineHarness;

beforeEach(() => {
  h = new EngineHarness('group-view');
});

afterEach(() => h.close());

describe('groupStatsOf', () => {
  it('counts ready as the undispatched messages after each cursor plus the Ready-again queue', () => {
    h.appendMany('a', 10);
    h.appendMany('b', 4);
    const group = h.groups.put('g', {});
    group.cursors.set('a', 7);
    group.cursors.set('b', 0);
    group.readyQueue.push({ topic: 'a', offset: 2 }, 'again');
    group.readyQueue.push({ topic: 'b', offset: 9 }, 'again');
    expect(groupStatsOf(group, h.topics).ready).toBe(3 + 4 + 2);
  });

  it('passes the runtime counters through, and dlq is what was dead-lettered and not redriven', () => {
    const group = h.groups.put('g', {});
    Object.assign(group, { inflight: 3, waitingRetry: 2, committed: 40, deadLettered: 5, redriven: 2 });
    expect(groupStatsOf(group, h.topics)).toEqual({
      ready: 0,
      inflight: 3,
      waitingRetry: 2,
      dlq: 3,
      committed: 40,
    });
  });

  it('counts nothing for a cursor on a topic it does not know or a cursor at the end', () => {
    h.appendMany('a', 2);
    const group = h.groups.put('g', {});
    group.cursors.set('a', 2);
    group.cursors.set('gone', 5);
    expect(groupStatsOf(group, h.topics).ready).toBe(0);
  });

  it('adds up what each instance of a broadcasting group has still to be delivered (B1)', () => {
    h.appendMany('a', 10);
    h.appendMany('b', 3);
    const group = h.groups.put('g', { consumeMode: 'broadcasting' });
    const behind = new BroadcastInstance(group, 'one', 0);
    behind.cursors.set('a', 0);
    behind.cursors.set('b', 1);
    const ahead = new BroadcastInstance(group, 'two', 0);
    ahead.cursors.set('a', 8);
    const released = heldDelivery('a', 1, 'ready');
    ahead.held.set(heldKey('a', 1), released);
    ahead.readyAgain.push(released);
    expect(groupStatsOf(group, h.topics, [behind]).ready).toBe(10 + 2);
    expect(groupStatsOf(group, h.topics, [behind, ahead]).ready).toBe(10 + 2 + 2 + 1);
  });
});

describe('describeGroup', () => {
  it('shows the name, the current config and the stats', () => {
    h.appendMany('a', 2);
    const group = h.groups.put('g', { maxRetries: 3 });
    group.cursors.set('a', 0);
    group.committed = 1;
    expect(describeGroup(group, h.topics)).toEqual({
      name: 'g',
      config: group.config,
      stats: {
        ready: 2,
        inflight: 0,
        waitingRetry: 0,
        dlq: 0,
        committed: 1,
        topics: { a: { cursor: 0, firstOffset: 0 } },
      },
      pause: { state: 'closed', manuallyPaused: false, failureRatio: 0 },
    });
    expect(describeGroup(group, h.topics).config.maxRetries).toBe(3);
  });
});
