import type { Clock } from '@ricochet/core';
import type { BrokerStore } from '../../store/broker-store.js';
import type { DeliveryAddress, DeliveryRecord } from '../../store/records.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import { RECOVERABLE_HORIZON_MS, type Scheduler } from '../timers/scheduler.js';
import type { DueEvents } from './due-events.js';
import type { EffectApplier } from './effect-applier.js';
import type { Settlement } from './settlement.js';

export interface RecoveryDeps {
  readonly clock: Clock;
  readonly store: BrokerStore;
  readonly groups: GroupRegistry;
  readonly applier: EffectApplier;
  readonly settlement: Settlement;
  readonly dueEvents: DueEvents;
  readonly scheduler: Scheduler;
}

/**
 * Rebuild the engine's in-memory view of deliveries after a start: every stored record is adopted
 * as it stands (counted, queued when Ready, its FIFO message group held, P5), then the events the
 * downtime implies are applied through core like any other. Simple-consumer leases survive (their
 * deadlines are in the schedule, so a client may still ack them); push deliveries are released,
 * since their sessions died with the broker (C2) — or, past their deadline, timed out (P2);
 * WaitingRetry messages stay on disk until the scheduler fires them, or are Ready when it already
 * had (or would have). Deliveries whose state was still in write-behind memory are not here: the stored cursors
 * lag behind them, so they are taken from the logs again.
 */
export function recoverDeliveries(deps: RecoveryDeps): void {
  const nowMs = deps.clock.now();
  for (const { address, record } of deps.store.scanDeliveries()) {
    const group = deps.groups.get(address.group);
    if (!group) continue;
    const state = record.state.state;
    if (state === 'commit' || state === 'dlq') {
      // Terminal records are deleted when reached; one left over means a crash mid-way.
      deps.applier.discard(address);
      continue;
    }
    deps.applier.adopt(group, address, record);
    if (state === 'inflight' && record.consumer === 'push')
      deps.settlement.release(address, record.state.lease);
    if (state === 'waitingRetry') recoverRetry(deps, group, address, record, nowMs);
  }
}

/**
 * A WaitingRetry's entry is in the store, unless the scheduler took it (the Ready state it moved
 * to was still in write-behind memory) or kept it in memory only (`recoverable`, due within
 * {@link RECOVERABLE_HORIZON_MS} of when it was added, so of now). Only the entries of records due
 * within that horizon are looked up: a million pending retries cost one scan here, not a million
 * reads besides. One not found is due (it fell due, or would have: Ready now) or is scheduled again.
 */
function recoverRetry(
  deps: RecoveryDeps,
  group: GroupRuntime,
  address: DeliveryAddress,
  record: DeliveryRecord,
  nowMs: number,
): void {
  const key = record.scheduleKey;
  if (!key || key[1] > nowMs + RECOVERABLE_HORIZON_MS || deps.store.getSchedule(key)) return;
  if (key[1] <= nowMs) deps.dueEvents.retryFellDueBeforeRestart(group, address, record);
  else
    deps.scheduler.add(
      group.name,
      key[1],
      address.topic,
      address.offset,
      { kind: 'retryDue' },
      'recoverable',
    );
}
