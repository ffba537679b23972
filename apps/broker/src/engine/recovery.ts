import type { BrokerStore } from '../store/broker-store.js';
import type { DeliveryLifecycle } from './delivery-lifecycle.js';
import type { GroupRegistry } from './group-registry.js';

export interface RecoveryDeps {
  readonly store: BrokerStore;
  readonly groups: GroupRegistry;
  readonly lifecycle: DeliveryLifecycle;
}

/**
 * Rebuild the engine's in-memory view of deliveries after a start. Simple-consumer leases survive
 * (their deadlines are in the schedule, so a client may still ack them); push deliveries are
 * released, since their sessions died with the broker (C2), or timed out when their deadline
 * passed meanwhile (P2); WaitingRetry messages stay on disk until the scheduler fires them (or are
 * Ready when it already had); Ready ones are queued again. FIFO groups get back the head of every
 * busy message group (P5). Deliveries whose state was still in write-behind memory are not here:
 * the stored cursors lag behind them, so they are taken from the logs again.
 */
export function recoverDeliveries(deps: RecoveryDeps): void {
  for (const { address, record } of deps.store.scanDeliveries()) {
    const group = deps.groups.get(address.group);
    if (!group) continue;
    const state = record.state.state;
    if (group.config.fifo && (state === 'inflight' || state === 'waitingRetry')) {
      const messageGroup = deps.store.getMessage(address.topic, address.offset)?.messageGroup;
      if (messageGroup !== undefined) group.fifoHeads.claim(address.topic, messageGroup, address.offset);
    }
    switch (state) {
      case 'ready':
        group.readyQueue.push(deps.lifecycle.readyRefOf(group, address));
        break;
      case 'inflight':
        if (record.consumer === 'push') deps.lifecycle.recoverPushInflight(group, address, record);
        else group.inflight++;
        break;
      case 'waitingRetry':
        // The scheduler took its entry, but the Ready state it moved to was still in memory.
        if (record.scheduleKey && !deps.store.getSchedule(record.scheduleKey))
          deps.lifecycle.recoverDueRetry(group, address, record);
        else group.waitingRetry++;
        break;
      case 'commit':
      case 'dlq':
        // Terminal records are deleted when reached; one left over means a crash mid-way.
        void deps.store.deleteDelivery(address);
        break;
    }
  }
}
