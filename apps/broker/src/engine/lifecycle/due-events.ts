import type { Clock, Random } from '@ricochet/core';
import type { DeliveryAddress, DeliveryRecord, ScheduleKey } from '../../store/records.js';
import type { BrokerMetrics } from '../broker-metrics.js';
import type { DeliveryRecords } from '../model/delivery-records.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import type { PushLease } from '../timers/push-lease-table.js';
import type { DueEntry } from '../timers/scheduler.js';
import type { EffectApplier } from './effect-applier.js';
import { withoutScheduleKey } from './lifecycle-context.js';
import { drivePush, driveSimple } from './lifecycle-driver.js';

export interface DueEventsDeps {
  readonly clock: Clock;
  readonly random: Random;
  readonly groups: GroupRegistry;
  readonly records: DeliveryRecords;
  readonly applier: EffectApplier;
  readonly metrics: BrokerMetrics;
  readonly maxReadyQueuePerGroup: number;
}

/**
 * Turns the timers that fire — the scheduler's due entries and the push lease table's deadlines —
 * into core's events (`leaseExpired`, `retryDue`, `timedOut`; a delay message's due time), and
 * hands what core decides to the applier. An entry whose record moved on meanwhile (settled, or a
 * newer lease) is stale and ignored: the record is the truth.
 */
export class DueEvents {
  readonly #deps: DueEventsDeps;

  constructor(deps: DueEventsDeps) {
    this.#deps = deps;
  }

  /**
   * A group's due schedule entries, earliest first; returns how many were taken. Every entry that
   * makes a message Ready needs room in the group's ready queue: when it is full, the rest wait in
   * the store. Entries of a group that no longer exists are all taken (dropped).
   */
  onDue(groupName: string, due: readonly DueEntry[]): number {
    const group = this.#deps.groups.get(groupName);
    if (!group) return due.length;
    let taken = 0;
    for (const { key, entry } of due) {
      if (group.readyQueue.size >= this.#deps.maxReadyQueuePerGroup) break;
      const address: DeliveryAddress = { group: group.name, topic: key[2], offset: key[3] };
      switch (entry.kind) {
        case 'leaseExpiry':
          this.#leaseExpired(group, address, entry.lease, key);
          break;
        case 'retryDue':
          this.#retryDue(group, address, key);
          break;
        case 'delayDue':
          this.#deps.applier.admitDelayed(group, address);
          break;
      }
      taken++;
    }
    return taken;
  }

  /** The broker-side consumption timeout of a push lease fired (P2). */
  onPushLeaseExpired(lease: PushLease): void {
    const group = this.#deps.groups.get(lease.address.group);
    const record = group ? this.#deps.records.get(lease.address) : undefined;
    if (!group || record?.consumer !== 'push' || record.state.lease !== lease.lease) return;
    const atMs = Math.max(this.#deps.clock.now(), lease.deadlineMs);
    drivePush(
      this.#deps,
      { group, address: lease.address, before: record, messageId: record.messageId },
      record.state,
      { type: 'timedOut', atMs, lease: lease.lease },
    );
  }

  /**
   * After a restart: a WaitingRetry whose schedule entry the scheduler had taken before the crash,
   * while the Ready state it moved to was still in memory. Its retry is due: it happened.
   */
  retryFellDueBeforeRestart(group: GroupRuntime, address: DeliveryAddress, record: DeliveryRecord): void {
    if (record.state.state !== 'waitingRetry') return;
    this.#makeRetryReady(group, address, withoutScheduleKey(record), record.state.retryAtMs);
  }

  #leaseExpired(group: GroupRuntime, address: DeliveryAddress, lease: number, key: ScheduleKey): void {
    const record = this.#deps.records.get(address);
    // The entry is stale when the lease was settled or replaced meanwhile.
    if (record?.consumer !== 'simple' || !sameKey(record.scheduleKey, key)) return;
    const atMs = Math.max(this.#deps.clock.now(), key[1]);
    driveSimple(
      this.#deps,
      { group, address, before: withoutScheduleKey(record), messageId: record.messageId },
      record.state,
      { type: 'leaseExpired', atMs, lease },
    );
  }

  #retryDue(group: GroupRuntime, address: DeliveryAddress, key: ScheduleKey): void {
    const record = this.#deps.records.get(address);
    if (!record || !sameKey(record.scheduleKey, key)) return;
    const nowMs = this.#deps.clock.now();
    // How late the timer fired: a loaded event loop or a ready queue at its limit shows here.
    if (record.consumer === 'push') this.#deps.metrics.retryLateness(Math.max(0, nowMs - key[1]) / 1_000);
    this.#makeRetryReady(group, address, withoutScheduleKey(record), Math.max(nowMs, key[1]));
  }

  /** WaitingRetry → Ready at `atMs` (P3). */
  #makeRetryReady(group: GroupRuntime, address: DeliveryAddress, record: DeliveryRecord, atMs: number): void {
    if (record.consumer !== 'push') return;
    drivePush(this.#deps, { group, address, before: record, messageId: record.messageId }, record.state, {
      type: 'retryDue',
      atMs,
    });
  }
}

function sameKey(a: readonly unknown[] | undefined, b: readonly unknown[]): boolean {
  return a !== undefined && a.length === b.length && a.every((part, i) => part === b[i]);
}
