import { BrokerError } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BroadcastInstance, heldKey } from '../broadcast/broadcast-instance.js';
import { EngineHarness, heldDelivery } from '../engine-test-harness.test-support.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { GroupBacklog } from './group-backlog.js';

let h: EngineHarness;
let instances: Map<string, BroadcastInstance[]>;
let backlog: GroupBacklog;

function instance(group: GroupRuntime, clientId: string, cursors: Record<string, number>): BroadcastInstance {
  const created = new BroadcastInstance(group, clientId, 0);
  for (const [topic, cursor] of Object.entries(cursors)) {
    created.cursors.set(topic, cursor);
    h.groups.addReader(group, topic);
  }
  instances.set(group.name, [...(instances.get(group.name) ?? []), created]);
  return created;
}

/** Place `group`'s cursor on `topic`, as subscribing does: the registry then knows it reads the topic. */
function readFrom(group: GroupRuntime, topic: string, cursor: number): void {
  group.cursors.set(topic, cursor);
  h.groups.addReader(group, topic);
}

function holdInflight(target: BroadcastInstance, topic: string, offset: number): void {
  target.held.set(heldKey(topic, offset), heldDelivery(topic, offset));
}

beforeEach(() => {
  h = new EngineHarness('backlog');
  instances = new Map();
  backlog = new GroupBacklog({
    topics: h.topics,
    groups: h.groups,
    broadcastInstances: (group) => instances.get(group) ?? [],
  });
});

afterEach(() => h.close());

describe('GroupBacklog', () => {
  it('counts a clustering group’s undispatched, Ready-again, Inflight and WaitingRetry messages', () => {
    h.appendMany('a', 10);
    h.appendMany('b', 5);
    const group = h.groups.put('g', {});
    readFrom(group, 'a', 6);
    readFrom(group, 'b', 5);
    group.readyQueue.push({ topic: 'a', offset: 1 }, 'again');
    Object.assign(group, { inflight: 2, waitingRetry: 3, committed: 100, deadLettered: 7 });
    expect(backlog.of(group)).toBe(4 + 1 + 2 + 3);
  });

  it('counts a broadcasting group’s furthest-behind instance, its Inflight included (B1)', () => {
    h.appendMany('a', 10);
    const group = h.groups.put('g', { consumeMode: 'broadcasting' });
    expect(backlog.of(group)).toBe(0);
    const near = instance(group, 'near', { a: 9 });
    for (const offset of [3, 4, 5, 6]) holdInflight(near, 'a', offset);
    instance(group, 'far', { a: 6 });
    // near: 1 after its cursor + 4 inflight; far: 4 after its cursor.
    expect(backlog.of(group)).toBe(5);
    instance(group, 'farther', { a: 2 });
    expect(backlog.of(group)).toBe(8);
  });

  it('does not throttle a topic without a limit, however large the backlog', () => {
    h.appendMany('a', 50);
    readFrom(h.groups.put('g', {}), 'a', 0);
    expect(backlog.throttle('a')).toBeUndefined();
    expect(backlog.throttle('unknown')).toBeUndefined();
  });

  it('throttles a topic once a group reading it reaches the limit, and names the group (R4)', () => {
    h.topics.put('a', { type: 'normal', maxBacklogMessages: 3 });
    h.appendMany('a', 2);
    const group = h.groups.put('g', {});
    readFrom(group, 'a', 0);
    expect(backlog.throttle('a')).toBeUndefined();
    h.append('a');
    const error = backlog.throttle('a');
    expect(error).toBeInstanceOf(BrokerError);
    expect(error).toMatchObject({
      errorName: 'TOO_MANY_REQUESTS',
      details: { topic: 'a', group: 'g', limit: 3 },
    });
    expect(error?.message).toContain('3 unconsumed');
    readFrom(group, 'a', 1);
    expect(backlog.throttle('a')).toBeUndefined();
  });

  it('counts the backlog over every topic the group reads, but only groups reading the topic', () => {
    h.topics.put('a', { type: 'normal', maxBacklogMessages: 5 });
    h.appendMany('a', 1);
    h.appendMany('b', 10);
    readFrom(h.groups.put('other', {}), 'b', 0);
    expect(backlog.throttle('a')).toBeUndefined();
    const reader = h.groups.put('reader', {});
    readFrom(reader, 'a', 0);
    readFrom(reader, 'b', 6);
    // 1 in a + 4 in b: the group reads a, so its whole backlog counts.
    expect(backlog.throttle('a')?.details).toEqual({ topic: 'a', group: 'reader', limit: 5 });
  });

  it('throttles for a broadcasting group through its instances’ cursors', () => {
    h.topics.put('a', { type: 'normal', maxBacklogMessages: 2 });
    h.appendMany('a', 4);
    const group = h.groups.put('g', { consumeMode: 'broadcasting' });
    expect(backlog.reads(group, 'a')).toBe(false);
    expect(backlog.throttle('a')).toBeUndefined();
    instance(group, 'one', { a: 3 });
    expect(backlog.reads(group, 'a')).toBe(true);
    expect(backlog.throttle('a')).toBeUndefined();
    instance(group, 'two', { a: 2 });
    expect(backlog.throttle('a')?.details).toMatchObject({ group: 'g' });
  });

  it('reads a topic through a cursor; a clustering group never through instances', () => {
    const clustering = h.groups.put('c', {});
    instance(clustering, 'stray', { a: 0 });
    expect(backlog.reads(clustering, 'a')).toBe(false);
    readFrom(clustering, 'a', 0);
    expect(backlog.reads(clustering, 'a')).toBe(true);
    expect(backlog.reads(clustering, 'b')).toBe(false);
  });

  it('yields each group’s inflight and backlog for the gauges', () => {
    h.appendMany('a', 3);
    const c = h.groups.put('c', {});
    readFrom(c, 'a', 1);
    c.inflight = 4;
    const b = h.groups.put('b', { consumeMode: 'broadcasting' });
    instance(b, 'one', { a: 0 });
    expect([...backlog.gauges()]).toEqual([
      { group: 'c', inflight: 4, backlog: 2 + 4 },
      { group: 'b', inflight: 0, backlog: 3 },
    ]);
  });
});
