import type { Clock } from '@ricochet/core';
import type { BrokerStore } from '../../store/broker-store.js';
import type { GroupRegistry } from '../model/group-registry.js';
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
}

/**
 * Rebuild the engine's in-memory view of deliveries after a start: every stored record is adopted
 * as it stands (counted, queued when Ready, its FIFO message group held, P5), then the events the
 * downtime implies are applied through core like any other. Simple-consumer leases survive (their
 * deadlines are in the schedule, so a client may still ack them); push deliveries are released,
 * since their sessions died with the broker (C2) — or, past their deadline, timed out (P2);
 * WaitingRetry messages stay on disk until the scheduler fires them, or are Ready when it already
 * had. Deliveries whose state was still in write-behind memory are not here: the stored cursors
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
    // The scheduler took its entry, but the Ready state it moved to was still in write-behind
    // memory. Only an entry due by now can have been taken: the entries of retries still to come
    // are not looked up, so a million pending retries cost one scan here, not a million reads
    // besides.
    if (
      state === 'waitingRetry' &&
      record.scheduleKey &&
      record.scheduleKey[1] <= nowMs &&
      !deps.store.getSchedule(record.scheduleKey)
    )
      deps.dueEvents.retryFellDueBeforeRestart(group, address, record);
  }
}
