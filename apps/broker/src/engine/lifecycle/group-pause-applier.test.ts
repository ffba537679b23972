import {
  DEFAULT_PAUSE_ON_FAILURES,
  type GroupPauseEvent,
  groupPauseTransition,
  ManualClock,
  resolveGroupConfig,
} from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import type { BrokerStore } from '../../store/broker-store.js';
import { BrokerMetrics } from '../broker-metrics.js';
import type { DeliveryRecords } from '../model/delivery-records.js';
import { type GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import { ManualTimers } from '../timers/manual-timers.test-support.js';
import { GroupPauseApplier } from './group-pause-applier.js';

describe('GroupPauseApplier', () => {
  it("logs one line per move of a group's breaker, and none for a manual pause", () => {
    const notices: string[] = [];
    const saved: string[] = [];
    const groups: Pick<GroupRegistry, 'savePause'> = { savePause: (group) => saved.push(group.name) };
    const applier = new GroupPauseApplier(
      {
        // The group has no message, so nothing is held and neither is touched.
        store: {} as BrokerStore,
        records: {} as DeliveryRecords,
        clock: { now: () => 0 },
        timers: new ManualTimers(new ManualClock(0)),
        groups: groups as GroupRegistry,
        metrics: new BrokerMetrics({ groupGauges: () => [] }),
        onNotice: (message) => notices.push(message),
      },
      () => {},
    );
    const group = new GroupRuntime({ name: 'billing', config: resolveGroupConfig({}), createdAt: 0 });
    const apply = (event: GroupPauseEvent) =>
      applier.apply(group, groupPauseTransition(group.pause, event, DEFAULT_PAUSE_ON_FAILURES));

    apply({ type: 'pause', atMs: 0 });
    apply({ type: 'resume', atMs: 0 });
    expect(notices).toEqual([]);
    // A storm: every outcome a failure, as many as the rule needs to look at the ratio.
    for (let i = 0; i < DEFAULT_PAUSE_ON_FAILURES.minOutcomes; i++) {
      apply({ type: 'outcome', outcome: 'failure', deliveryId: `d${i}`, atMs: 0 });
    }
    expect(group.pause.breaker.state).toBe('open');
    apply({ type: 'resume', atMs: 1 });
    expect(notices).toEqual([
      'group billing: failure-storm breaker closed → open: deliveries held',
      'group billing: failure-storm breaker open → closed: deliveries resume',
    ]);
    expect(saved.length).toBeGreaterThanOrEqual(2);
  });

  it("wakes an open breaker's group for its probe on the broker's timers, and close() cancels the wake-up", async () => {
    const clock = new ManualClock(0);
    const timers = new ManualTimers(clock);
    const groups: Pick<GroupRegistry, 'savePause'> = { savePause: () => {} };
    const applier = new GroupPauseApplier(
      {
        store: {} as BrokerStore,
        records: {} as DeliveryRecords,
        clock,
        timers,
        groups: groups as GroupRegistry,
        metrics: new BrokerMetrics({ groupGauges: () => [] }),
      },
      () => {},
    );
    const group = new GroupRuntime({ name: 'billing', config: resolveGroupConfig({}), createdAt: 0 });
    let wakes = 0;
    group.onWake(() => {
      wakes += 1;
    });
    for (let i = 0; i < DEFAULT_PAUSE_ON_FAILURES.minOutcomes; i++) {
      const event: GroupPauseEvent = { type: 'outcome', outcome: 'failure', deliveryId: `d${i}`, atMs: 0 };
      applier.apply(group, groupPauseTransition(group.pause, event, DEFAULT_PAUSE_ON_FAILURES));
    }
    expect(group.pause.breaker).toMatchObject({
      state: 'open',
      nextProbeAtMs: DEFAULT_PAUSE_ON_FAILURES.pauseMs,
    });
    expect(timers.nextDueAtMs()).toBe(DEFAULT_PAUSE_ON_FAILURES.pauseMs);

    await timers.advanceBy(DEFAULT_PAUSE_ON_FAILURES.pauseMs - 1, async () => {});
    expect(wakes).toBe(0);
    await timers.advanceBy(1, async () => {});
    expect(wakes).toBe(1);

    applier.wakeAt(group, clock.now() + 60_000);
    expect(timers.nextDueAtMs()).toBe(clock.now() + 60_000);
    applier.close();
    expect(timers.nextDueAtMs()).toBeUndefined();
    // A closed applier arms nothing more.
    applier.wakeAt(group, clock.now() + 1_000);
    expect(timers.nextDueAtMs()).toBeUndefined();
  });
});
