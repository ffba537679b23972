import { DEFAULT_PAUSE_ON_FAILURES, initialGroupPauseState, resolveGroupConfig } from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngineHarness, START_MS } from '../engine-test-harness.test-support.js';
import { GroupRegistry } from './group-registry.js';

let h: EngineHarness;

beforeEach(() => {
  h = new EngineHarness('groups');
});

afterEach(() => h.close());

describe('GroupRegistry', () => {
  it("keeps a group's pause with its record: open stays open, half-open probes at once, a PUT keeps it (DESIGN.md §11)", async () => {
    const open = h.groups.put('open', { pauseOnFailures: DEFAULT_PAUSE_ON_FAILURES });
    open.pause = {
      breaker: { state: 'open', pauseMs: 5_000, nextProbeAtMs: START_MS + 5_000 },
      window: [],
      manuallyPaused: false,
    };
    h.groups.savePause(open);
    const probing = h.groups.put('probing', { pauseOnFailures: DEFAULT_PAUSE_ON_FAILURES });
    probing.pause = {
      breaker: { state: 'halfOpen', pauseMs: 10_000, probeId: 'p', probeSentAtMs: START_MS },
      window: [],
      manuallyPaused: true,
    };
    h.groups.savePause(probing);
    h.groups.put('open', { pauseOnFailures: DEFAULT_PAUSE_ON_FAILURES, maxRetries: 2 });
    h.groups.put('plain', {});
    await h.committed();
    h.clock.advanceBy(1_000);
    const reloaded = new GroupRegistry(h.store, h.clock, true);
    reloaded.load();
    expect(reloaded.get('open')?.pause.breaker).toEqual({
      state: 'open',
      pauseMs: 5_000,
      nextProbeAtMs: START_MS + 5_000,
    });
    expect(reloaded.get('probing')?.pause).toMatchObject({
      breaker: { state: 'open', pauseMs: 10_000, nextProbeAtMs: START_MS + 1_000 },
      manuallyPaused: true,
    });
    expect(reloaded.get('plain')?.pause).toEqual(initialGroupPauseState());
    expect(h.store.listGroups().find((group) => group.name === 'plain')).not.toHaveProperty('pause');
  });

  it('keeps the groups with the failure-storm rule on apart, as their configs change and after a load', async () => {
    h.groups.put('billing', { pauseOnFailures: DEFAULT_PAUSE_ON_FAILURES });
    h.groups.put('audit', {});
    const ruled = () => [...h.groups.withStormRule()].map((group) => group.name).sort();
    expect(ruled()).toEqual(['billing']);
    h.groups.put('audit', { pauseOnFailures: DEFAULT_PAUSE_ON_FAILURES });
    h.groups.put('billing', {});
    expect(ruled()).toEqual(['audit']);
    await h.committed();
    const reloaded = new GroupRegistry(h.store, h.clock, true);
    reloaded.load();
    expect([...reloaded.withStormRule()].map((group) => group.name)).toEqual(['audit']);
  });

  it('creates an unknown group with the default config on first use when auto-creation is on', async () => {
    const group = h.groups.require('billing');
    expect(group.config).toEqual(resolveGroupConfig({}));
    expect(h.groups.require('billing')).toBe(group);
    expect(h.groups.list()).toEqual([group]);
    await h.committed();
    expect(h.store.listGroups()).toEqual([
      { name: 'billing', config: resolveGroupConfig({}), createdAt: START_MS },
    ]);
  });

  it('refuses an unknown group when auto-creation is off (404)', () => {
    const groups = new GroupRegistry(h.store, h.clock, false);
    let thrown: unknown;
    try {
      groups.require('billing');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BrokerError);
    expect(thrown).toMatchObject({ errorName: 'NOT_FOUND', details: { group: 'billing' } });
    expect(groups.get('billing')).toBeUndefined();
    expect(groups.put('billing', {}).name).toBe('billing');
  });

  it('replaces a config in place: the runtime, its counters and its creation time stay', async () => {
    const group = h.groups.put('g', { maxRetries: 3 });
    group.committed = 5;
    group.cursors.set('t', 9);
    h.clock.advanceBy(1_000);
    const replaced = h.groups.put('g', { fifo: true });
    expect(replaced).toBe(group);
    expect(group.config).toEqual(resolveGroupConfig({ fifo: true }));
    expect(group.config.retryPolicy).toEqual({ type: 'fixed', delayMs: 3_000 });
    expect([group.committed, group.cursors.get('t')]).toEqual([5, 9]);
    await h.committed();
    expect(h.store.listGroups()[0]).toMatchObject({
      createdAt: START_MS,
      config: { fifo: true, maxRetries: 16 },
    });
  });

  it('stores cursors and counters, and loads them with the groups after a restart', async () => {
    const group = h.groups.put('g', { startFrom: 'earliest' });
    group.cursors.set('t', 7);
    h.groups.saveCursor(group, 't');
    h.groups.saveCursor(group, 'never-read');
    Object.assign(group, { committed: 4, deadLettered: 2, redriven: 1, inflight: 3, waitingRetry: 1 });
    h.groups.saveCounters(group);
    await h.committed();
    await h.restart();
    const loaded = h.groups.get('g');
    expect(loaded).not.toBe(group);
    expect(loaded?.config.startFrom).toBe('earliest');
    expect([...(loaded?.cursors ?? [])]).toEqual([['t', 7]]);
    // Counts of states come from the delivery records (recovery), not from here.
    expect(
      loaded && [
        loaded.committed,
        loaded.deadLettered,
        loaded.redriven,
        loaded.inflight,
        loaded.waitingRetry,
      ],
    ).toEqual([4, 2, 1, 0, 0]);
  });

  it('marks a success past the stored cursor, stores the marks with that cursor, and drops them once a cursor passes them', async () => {
    const group = h.groups.put('g', { startFrom: 'earliest' });
    expect(h.groups.markSucceeded(group, 't', 3)).toBe(false); // no stored cursor: history instead
    group.cursors.set('t', 2);
    h.groups.saveCursor(group, 't');
    group.cursors.set('t', 9); // dispatched on, not flushed yet
    expect(h.groups.markSucceeded(group, 't', 1)).toBe(true); // behind the stored cursor: nothing to mark
    for (const offset of [4, 2, 3, 7]) expect(h.groups.markSucceeded(group, 't', offset)).toBe(true);
    h.groups.writeMarks();
    await h.committed();
    expect(h.store.listCursors()).toEqual([
      { group: 'g', topic: 't', nextOffset: 2, settledAhead: [2, 5, 7, 8] },
    ]);
    await h.restart();
    const loaded = h.groups.get('g');
    if (!loaded) throw new Error('the group is gone');
    expect([1, 2, 3, 4, 5, 6, 7].map((offset) => h.groups.isMarkedSucceeded(loaded, 't', offset))).toEqual([
      false,
      true,
      true,
      true,
      false,
      false,
      true,
    ]);
    h.groups.saveCursor(loaded, 't', 5);
    await h.committed();
    expect(h.store.listCursors()).toEqual([{ group: 'g', topic: 't', nextOffset: 5, settledAhead: [7, 8] }]);
    h.groups.saveCursor(loaded, 't', 8);
    await h.committed();
    expect(h.store.listCursors()).toEqual([{ group: 'g', topic: 't', nextOffset: 8 }]);
  });

  it('marks runs of successes at once, leaving out what lies behind the stored cursor, and stores them with it', async () => {
    const group = h.groups.put('g', { startFrom: 'earliest' });
    expect(h.groups.canMark(group, 't')).toBe(false);
    expect(h.groups.markSucceededRuns(group, 't', [0, 4])).toBe(false); // no stored cursor: history instead
    h.groups.saveCursor(group, 't', 2);
    expect(h.groups.canMark(group, 't')).toBe(true);
    // Runs as core's run decision gives them: [0, 4) straddles the stored cursor at 2.
    expect(h.groups.markSucceededRuns(group, 't', [0, 4, 6, 9])).toBe(true);
    expect(h.groups.markSucceededRuns(group, 't', [4, 6])).toBe(true);
    h.groups.writeMarks();
    await h.committed();
    expect(h.store.listCursors()).toEqual([{ group: 'g', topic: 't', nextOffset: 2, settledAhead: [2, 9] }]);
  });

  it("keeps successes in the history by the group's setting, else by the broker's", () => {
    const byBroker = h.groups.put('by-broker', {});
    const full = h.groups.put('full', { history: 'full' });
    expect(h.groups.historyOf(byBroker)).toBe('failures');
    expect(h.groups.historyOf(full)).toBe('full');
    const fullByDefault = new GroupRegistry(h.store, h.clock, true, 'full');
    expect(fullByDefault.historyOf(fullByDefault.put('x', {}))).toBe('full');
    expect(fullByDefault.historyOf(fullByDefault.put('y', { history: 'failures' }))).toBe('failures');
  });

  it('gives a config stored by an older broker the defaults of the fields it lacks', async () => {
    const config = {
      maxRetries: 2,
      retryPolicy: { type: 'fixed', delayMs: 10 },
      fifo: false,
      consumptionTimeoutMs: 5,
    };
    await h.store.putGroup({ name: 'old', config: config as never, createdAt: 1 });
    await h.store.putGroupCounters({ group: 'old', committed: 1, deadLettered: 0 } as never);
    await h.store.putCursor({ group: 'nobody', topic: 't', nextOffset: 1 });
    await h.restart();
    const old = h.groups.get('old');
    expect(old?.config).toEqual(resolveGroupConfig(config as never));
    expect(old?.config).toMatchObject({ consumeMode: 'clustering', startFrom: 'latest', maxRetries: 2 });
    expect(old?.redriven).toBe(0);
    expect(h.groups.get('nobody')).toBeUndefined();
  });
});

describe('GroupRuntime', () => {
  it('wakes its listeners until they unsubscribe, even one that unsubscribes while woken', () => {
    const group = h.groups.put('g', {});
    const calls: string[] = [];
    const stopA = group.onWake(() => {
      calls.push('a');
      stopA();
    });
    const stopB = group.onWake(() => calls.push('b'));
    group.wake();
    group.wake();
    stopB();
    group.wake();
    expect(calls).toEqual(['a', 'b', 'b']);
  });

  it('counts the messages after its cursors that it has not dispatched yet', () => {
    const group = h.groups.put('g', {});
    h.appendMany('t', 5);
    h.appendMany('u', 2);
    group.cursors.set('t', 3);
    group.cursors.set('u', 2);
    group.cursors.set('gone', 4);
    expect(group.undispatched((name) => h.topics.get(name))).toBe(2);
  });
});
