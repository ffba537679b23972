import {
  type Clock,
  initialPushState,
  initialSimpleState,
  type PushEvent,
  type PushState,
  pushTransition,
  type Random,
  type Rejection,
  type SimpleEvent,
  type SimpleState,
  simpleTransition,
} from '@ricochet/core';
import { BrokerError, type DeliveredMessage, dlqTopicOf } from '@ricochet/protocol';
import type { BrokerStore } from '../store/broker-store.js';
import type { DeliveryAddress, DeliveryRecord, HistoryRecord, StoredMessage } from '../store/records.js';
import type { BrokerMetrics } from './broker-metrics.js';
import { toDeliveredMessage } from './delivered-message.js';
import type { DeliveryRecords } from './delivery-records.js';
import type { GroupRegistry, GroupRuntime } from './group-registry.js';
import type { PushLease, PushLeaseTable } from './push-lease-table.js';
import type { ReadyRef } from './ready-queue.js';
import type { ReadyCandidate } from './ready-source.js';
import { encodeReceiptHandle, type ReceiptHandle } from './receipt-handle.js';
import type { DueEntry, Scheduler } from './scheduler.js';
import type { TopicRegistry } from './topic-registry.js';

export interface DeliveryLifecycleDeps {
  readonly store: BrokerStore;
  /** Delivery records, with write-behind for the states a crash may lose. */
  readonly records: DeliveryRecords;
  readonly clock: Clock;
  readonly random: Random;
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  readonly metrics: BrokerMetrics;
  /** The scheduler and the lease table call back into this class, so they are looked up late. */
  readonly scheduler: () => Scheduler;
  readonly pushLeases: () => PushLeaseTable;
  /** Messages were appended to a topic (a DLQ): wake its consumers once they are visible. */
  readonly onAppended: (topic: string) => void;
  readonly maxReadyQueuePerGroup: number;
}

/** The outcome of settling one receipt handle. */
export type SettleOutcome = { readonly ok: true } | { readonly ok: false; readonly error: BrokerError };

type Found = { readonly ok: true; readonly group: GroupRuntime; readonly record: DeliveryRecord };

/**
 * Drives `@ricochet/core`'s lifecycle state machines for every message of every group. It never
 * decides a transition itself: it feeds core the event, then carries out what core decided —
 * persist the record, schedule the lease deadline or the retry, queue the message as Ready again,
 * or move it to the DLQ — and records how each delivery ended in the message's history.
 */
export class DeliveryLifecycle {
  readonly #deps: DeliveryLifecycleDeps;

  constructor(deps: DeliveryLifecycleDeps) {
    this.#deps = deps;
  }

  // ─── Leasing ──────────────────────────────────────────────────────────────────────────────

  /** Lease a Ready message to a simple consumer until now + `invisibleDurationMs` (S2). */
  leaseForSimple(
    group: GroupRuntime,
    candidate: ReadyCandidate,
    invisibleDurationMs: number,
    consumerId: string,
  ): DeliveredMessage | undefined {
    const nowMs = this.#deps.clock.now();
    // A Ready record has the same counters whichever machine put it there; either can take it on.
    const ready = (candidate.record?.state ?? initialSimpleState()) as SimpleState;
    const result = simpleTransition(
      ready,
      { type: 'delivered', atMs: nowMs, invisibleDurationMs },
      group.config,
    );
    if (!result.ok || result.state.state !== 'inflight') return undefined;
    const state = result.state;
    const { topic, offset } = candidate.address;
    const scheduleKey = this.#deps
      .scheduler()
      .add(group.name, state.leaseDeadlineMs, topic, offset, { kind: 'leaseExpiry', lease: state.lease });
    // A simple lease is durable at once: a client may still ack it after a broker restart.
    this.#deps.records.put(
      candidate.address,
      {
        consumer: 'simple',
        state,
        messageId: candidate.message.messageId,
        scheduleKey,
        consumerId,
        deliveredAt: nowMs,
      },
      'now',
    );
    group.inflight++;
    this.#deps.metrics.delivered(group.name);
    const handle = encodeReceiptHandle({ ...candidate.address, lease: state.lease });
    return toDeliveredMessage(candidate.message, state.deliveryAttempt, handle);
  }

  /** Lease a Ready message to a push subscription for the group's consumption timeout (P2). */
  leaseForPush(
    group: GroupRuntime,
    candidate: ReadyCandidate,
    subscriptionId: number,
    consumerId: string,
  ): DeliveredMessage | undefined {
    const nowMs = this.#deps.clock.now();
    const ready = (candidate.record?.state ?? initialPushState()) as PushState;
    const result = pushTransition(
      ready,
      { type: 'delivered', atMs: nowMs, leaseDurationMs: group.config.consumptionTimeoutMs },
      this.#pushContext(group),
    );
    if (!result.ok || result.state.state !== 'inflight') return undefined;
    const state = result.state;
    // A push lease is released when the session ends, the broker's included: it may wait in memory.
    const record: DeliveryRecord = {
      consumer: 'push',
      state,
      messageId: candidate.message.messageId,
      consumerId,
      deliveredAt: nowMs,
    };
    if (candidate.record === undefined) this.#deps.records.putNew(candidate.address, record);
    else this.#deps.records.put(candidate.address, record, 'deferred');
    this.#deps.pushLeases().add({
      address: candidate.address,
      lease: state.lease,
      deadlineMs: state.leaseDeadlineMs,
      subscriptionId,
    });
    group.inflight++;
    this.#deps.metrics.delivered(group.name);
    const handle = encodeReceiptHandle({ ...candidate.address, lease: state.lease });
    return toDeliveredMessage(candidate.message, state.deliveryAttempt, handle);
  }

  // ─── Results ──────────────────────────────────────────────────────────────────────────────

  /** Commit a delivery while its lease is live (S3); a stale or expired handle is refused. */
  ack(handle: ReceiptHandle): SettleOutcome {
    const found = this.#find(handle);
    if (!found.ok) return found;
    const { group, record } = found;
    const event = { type: 'succeeded', atMs: this.#deps.clock.now(), lease: handle.lease } as const;
    const result = this.#settleLease(group, record, handle, event);
    if (!result.ok) return { ok: false, error: rejectionError(result.rejection) };
    this.#deps.records.delete(handle);
    this.#recordHistory(handle, record, 'committed');
    group.inflight--;
    group.committed++;
    this.#finished(group, handle);
    this.#deps.metrics.acked(group.name);
    return { ok: true };
  }

  /**
   * A push listener failed (P2): WaitingRetry for the policy's delay or `retryAfterMs` (P3), or the
   * DLQ after delivery `maxRetries + 1` (P4).
   */
  fail(handle: ReceiptHandle, reason: string, retryAfterMs: number | undefined): SettleOutcome {
    const found = this.#findPush(handle, 'nack');
    if (!found.ok) return found;
    const { group, record } = found;
    const result = pushTransition(
      record.state,
      {
        type: 'failed',
        atMs: this.#deps.clock.now(),
        lease: handle.lease,
        reason,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      },
      this.#pushContext(group),
    );
    if (!result.ok) return { ok: false, error: rejectionError(result.rejection) };
    this.#deps.pushLeases().remove(handle);
    this.#afterPushFailure(group, handle, record, result.state, 'failed');
    return { ok: true };
  }

  /**
   * The consumer moves a message to the DLQ at once, whatever attempts remain (D3, RocketMQ's
   * delay level −1): a push delivery, or a simple consumer's live lease.
   */
  deadLetterNow(handle: ReceiptHandle, reason: string): SettleOutcome {
    const found = this.#find(handle);
    if (!found.ok) return found;
    const { group, record } = found;
    const event = {
      type: 'deadLettered',
      atMs: this.#deps.clock.now(),
      lease: handle.lease,
      reason,
    } as const;
    const result = this.#settleLease(group, record, handle, event);
    if (!result.ok) return { ok: false, error: rejectionError(result.rejection) };
    if (result.state.state !== 'dlq')
      throw new Error(`core moved a dead-lettered message to ${result.state.state}`);
    group.inflight--;
    this.#recordHistory(handle, record, 'deadLettered', result.state.reason);
    this.#deadLetter(group, handle, result.state.failures, result.state.reason, result.state.lease);
    return { ok: true };
  }

  /**
   * A push consumer hands a delivery back unprocessed (C2): Ready again, no failure counted. A
   * release after the lease deadline is a timeout instead (core refuses the release).
   */
  release(handle: ReceiptHandle): SettleOutcome {
    const found = this.#findPush(handle, 'release');
    if (!found.ok) return found;
    const { group, record } = found;
    const nowMs = this.#deps.clock.now();
    const result = pushTransition(
      record.state,
      { type: 'released', atMs: nowMs, lease: handle.lease },
      this.#pushContext(group),
    );
    if (!result.ok) {
      if (result.rejection.reason === 'leaseExpired') return this.#timeOut(group, handle, record);
      return { ok: false, error: rejectionError(result.rejection) };
    }
    this.#deps.pushLeases().remove(handle);
    this.#recordHistory(handle, record, 'released');
    const { scheduleKey: _none, ...rest } = record;
    this.#deps.records.put(handle, { ...rest, state: result.state }, 'deferred');
    group.inflight--;
    group.readyQueue.push(this.readyRefOf(group, handle));
    this.#deps.metrics.released(group.name);
    group.wake();
    return { ok: true };
  }

  /** The broker-side consumption timeout of a push lease fired (P2). */
  onPushLeaseExpired(lease: PushLease): void {
    const group = this.#deps.groups.get(lease.address.group);
    const record = group ? this.#deps.records.get(lease.address) : undefined;
    if (!group || !record || record.consumer !== 'push' || record.state.lease !== lease.lease) return;
    this.#timeOut(group, { ...lease.address, lease: lease.lease }, record);
  }

  /**
   * Move a live simple lease's deadline to now + `invisibleDurationMs` under a new lease (S4).
   * Returns the new receipt handle; the old one stops working.
   */
  changeInvisibility(
    handle: ReceiptHandle,
    invisibleDurationMs: number,
  ):
    | { readonly ok: true; readonly receiptHandle: string; readonly messageId: string }
    | { readonly ok: false; readonly error: BrokerError } {
    const found = this.#find(handle);
    if (!found.ok) return found;
    const { group, record } = found;
    if (record.consumer !== 'simple') {
      return {
        ok: false,
        error: BrokerError.of(
          'BAD_REQUEST',
          'changeInvisibleDuration applies to simple-consumer leases only',
        ),
      };
    }
    const nowMs = this.#deps.clock.now();
    const result = simpleTransition(
      record.state,
      { type: 'invisibilityChanged', atMs: nowMs, lease: handle.lease, invisibleDurationMs },
      group.config,
    );
    if (!result.ok) return { ok: false, error: rejectionError(result.rejection) };
    if (result.state.state !== 'inflight')
      return { ok: false, error: BrokerError.of('INTERNAL_ERROR', 'lease lost') };
    const state = result.state;
    const scheduler = this.#deps.scheduler();
    if (record.scheduleKey) scheduler.remove(record.scheduleKey);
    const scheduleKey = scheduler.add(group.name, state.leaseDeadlineMs, handle.topic, handle.offset, {
      kind: 'leaseExpiry',
      lease: state.lease,
    });
    this.#deps.records.put(handle, { ...record, state, scheduleKey }, 'now');
    const message = this.#deps.topics.getMessage(handle.topic, handle.offset);
    return {
      ok: true,
      receiptHandle: encodeReceiptHandle({ ...handle, lease: state.lease }),
      messageId: message?.messageId ?? '',
    };
  }

  // ─── Scheduled events ─────────────────────────────────────────────────────────────────────

  /**
   * Handle a group's due schedule entries in order. Every entry that makes a message Ready needs
   * room in the group's ready queue; when it is full, the rest wait in the store.
   */
  onDue(group: GroupRuntime, due: readonly DueEntry[]): number {
    let taken = 0;
    let madeReady = false;
    for (const { key, entry } of due) {
      if (group.readyQueue.size >= this.#deps.maxReadyQueuePerGroup) break;
      const address: DeliveryAddress = { group: group.name, topic: key[2], offset: key[3] };
      switch (entry.kind) {
        case 'leaseExpiry':
          madeReady = this.#expireSimpleLease(group, address, entry.lease, key) || madeReady;
          break;
        case 'retryDue':
          madeReady = this.#retryDue(group, address, key) || madeReady;
          break;
        case 'delayDue':
          madeReady = this.#delayDue(group, address) || madeReady;
          break;
      }
      taken++;
    }
    if (madeReady) group.wake();
    return taken;
  }

  #expireSimpleLease(
    group: GroupRuntime,
    address: DeliveryAddress,
    lease: number,
    key: DueEntry['key'],
  ): boolean {
    const record = this.#deps.records.get(address);
    // The entry is stale when the lease was settled or replaced meanwhile.
    if (record?.consumer !== 'simple' || !sameKey(record.scheduleKey, key)) return false;
    const result = simpleTransition(
      record.state,
      { type: 'leaseExpired', atMs: Math.max(this.#deps.clock.now(), key[1]), lease },
      group.config,
    );
    if (!result.ok) return false;
    group.inflight--;
    if (result.state.state === 'dlq') {
      this.#recordHistory(address, record, 'deadLettered', result.state.reason);
      this.#deadLetter(group, address, result.state.failures, result.state.reason, result.state.lease);
      return false;
    }
    this.#recordHistory(address, record, 'leaseExpired', result.state.lastFailureReason);
    const { scheduleKey: _expired, ...rest } = record;
    // The schedule entry that made it due is gone: the Ready state must be on disk with that.
    this.#deps.records.put(address, { ...rest, state: result.state }, 'now');
    group.readyQueue.push(this.readyRefOf(group, address));
    this.#deps.metrics.retried(group.name);
    return true;
  }

  #retryDue(group: GroupRuntime, address: DeliveryAddress, key: DueEntry['key']): boolean {
    const record = this.#deps.records.get(address);
    if (!record || !sameKey(record.scheduleKey, key)) return false;
    if (!this.#makeRetryReady(group, address, record, Math.max(this.#deps.clock.now(), key[1]))) return false;
    group.waitingRetry--;
    return true;
  }

  /**
   * WaitingRetry → Ready at `atMs` (P3), queued for delivery. The Ready state may wait in memory:
   * a WaitingRetry record whose schedule entry is gone is recovered as Ready after a crash.
   */
  #makeRetryReady(
    group: GroupRuntime,
    address: DeliveryAddress,
    record: DeliveryRecord,
    atMs: number,
  ): boolean {
    if (record.consumer !== 'push') return false;
    const result = pushTransition(record.state, { type: 'retryDue', atMs }, this.#pushContext(group));
    if (!result.ok) return false;
    const { scheduleKey: _due, ...rest } = record;
    this.#deps.records.put(address, { ...rest, state: result.state }, 'deferred');
    group.readyQueue.push(this.readyRefOf(group, address));
    return true;
  }

  /**
   * T1: a delay message's time has come for this group. It becomes Ready with a record of its own:
   * the group's cursor passed it long ago and its schedule entry is now taken, so without the
   * record a restart would forget it.
   */
  #delayDue(group: GroupRuntime, address: DeliveryAddress): boolean {
    const message = this.#deps.topics.getMessage(address.topic, address.offset);
    if (!message || this.#deps.records.get(address)) return false;
    this.#deps.records.put(
      address,
      {
        consumer: 'push',
        state: initialPushState(),
        messageId: message.messageId,
      },
      'now',
    );
    group.readyQueue.push(this.readyRefOf(group, address));
    return true;
  }

  // ─── Recovery and DLQ operations ──────────────────────────────────────────────────────────

  /**
   * After a restart, a push delivery's consumer is gone: release it (C2), or time it out if its
   * deadline passed while the broker was down (P2).
   */
  recoverPushInflight(
    group: GroupRuntime,
    address: DeliveryAddress,
    record: DeliveryRecord & { consumer: 'push' },
  ): void {
    // Counted as inflight first, so that the release (or timeout) below counts it out again.
    group.inflight++;
    this.release({ ...address, lease: record.state.lease });
  }

  /** P5: hold a FIFO message as Ready behind the head of its message group. */
  parkBehindFifoHead(
    group: GroupRuntime,
    address: DeliveryAddress,
    messageId: string,
    messageGroup: string,
  ): void {
    this.#deps.records.put(address, { consumer: 'push', state: initialPushState(), messageId }, 'deferred');
    group.readyQueue.push({ topic: address.topic, offset: address.offset, messageGroup });
  }

  /** The ready-queue entry of a message; FIFO groups carry its message group along (P5). */
  readyRefOf(group: GroupRuntime, address: DeliveryAddress): ReadyRef {
    if (!group.config.fifo) return { topic: address.topic, offset: address.offset };
    const messageGroup = this.#deps.topics.getMessage(address.topic, address.offset)?.messageGroup;
    return {
      topic: address.topic,
      offset: address.offset,
      ...(messageGroup === undefined ? {} : { messageGroup }),
    };
  }

  /** After a restart: a WaitingRetry whose retry had fallen due before the crash is Ready now. */
  recoverDueRetry(group: GroupRuntime, address: DeliveryAddress, record: DeliveryRecord): void {
    if (record.state.state !== 'waitingRetry') return;
    this.#makeRetryReady(group, address, record, record.state.retryAtMs);
  }

  /**
   * D2: make a dead-lettered message Ready again for its group only, with a fresh attempt count.
   * Returns false when the DLQ entry was redriven already.
   */
  redrive(group: GroupRuntime, dlqMessage: StoredMessage): boolean {
    const deadLetter = dlqMessage.deadLetter;
    if (!deadLetter || deadLetter.redrivenAt !== undefined || deadLetter.group !== group.name) return false;
    const address: DeliveryAddress = {
      group: group.name,
      topic: deadLetter.originTopic,
      offset: deadLetter.originOffset,
    };
    if (this.#deps.records.get(address)) return false;
    const nowMs = this.#deps.clock.now();
    // Lease numbers continue from before, so history entries of the new deliveries stay unique.
    const fresh: PushState = { ...initialPushState(), lease: deadLetter.lastLease };
    this.#deps.records.put(
      address,
      {
        consumer: 'push',
        state: fresh,
        messageId: dlqMessage.messageId,
      },
      'now',
    );
    const marked: StoredMessage = { ...dlqMessage, deadLetter: { ...deadLetter, redrivenAt: nowMs } };
    this.#deps.topics.rewrite(marked);
    group.redriven++;
    this.#deps.groups.saveCounters(group);
    group.readyQueue.push(this.readyRefOf(group, address));
    group.wake();
    return true;
  }

  // ─── Shared ───────────────────────────────────────────────────────────────────────────────

  #timeOut(
    group: GroupRuntime,
    handle: ReceiptHandle,
    record: DeliveryRecord & { consumer: 'push' },
  ): SettleOutcome {
    const state = record.state;
    const deadlineMs = state.state === 'inflight' ? state.leaseDeadlineMs : this.#deps.clock.now();
    const result = pushTransition(
      state,
      { type: 'timedOut', atMs: Math.max(this.#deps.clock.now(), deadlineMs), lease: handle.lease },
      this.#pushContext(group),
    );
    if (!result.ok) return { ok: false, error: rejectionError(result.rejection) };
    this.#deps.pushLeases().remove(handle);
    this.#afterPushFailure(group, handle, record, result.state, 'timedOut');
    return { ok: true };
  }

  #afterPushFailure(
    group: GroupRuntime,
    address: DeliveryAddress,
    record: DeliveryRecord,
    state: PushState,
    result: 'failed' | 'timedOut',
  ): void {
    group.inflight--;
    if (state.state === 'dlq') {
      this.#recordHistory(address, record, 'deadLettered', state.reason);
      this.#deadLetter(group, address, state.failures, state.reason, state.lease);
      return;
    }
    if (state.state !== 'waitingRetry') return;
    this.#recordHistory(address, record, result, state.lastFailureReason);
    const scheduleKey = this.#deps
      .scheduler()
      .add(group.name, state.retryAtMs, address.topic, address.offset, { kind: 'retryDue' });
    // A failure is durable at once, with its schedule entry: a retry must survive a crash.
    this.#deps.records.put(
      address,
      {
        consumer: 'push',
        state,
        messageId: record.messageId,
        scheduleKey,
      },
      'now',
    );
    group.waitingRetry++;
    this.#deps.metrics.retried(group.name);
  }

  /** Move a message to `%DLQ%<group>` (D1): a copy keeps its id, body and properties. */
  #deadLetter(
    group: GroupRuntime,
    address: DeliveryAddress,
    attempts: number,
    reason: string,
    lastLease: number,
  ): void {
    const message = this.#deps.topics.getMessage(address.topic, address.offset);
    this.#deps.records.delete(address);
    group.deadLettered++;
    this.#deps.groups.saveCounters(group);
    this.#deps.metrics.deadLettered(group.name);
    this.#finished(group, address);
    if (!message) return;
    const dlq = this.#deps.topics.require(dlqTopicOf(group.name));
    const nowMs = this.#deps.clock.now();
    const {
      topic: _topic,
      offset: _offset,
      storedAt: _storedAt,
      deadLetter: _previous,
      deliverAt: _deliverAt,
      ...content
    } = message;
    this.#deps.topics.append(dlq, (offset) => ({
      ...content,
      topic: dlq.name,
      offset,
      storedAt: nowMs,
      deadLetter: {
        group: group.name,
        originTopic: address.topic,
        originOffset: address.offset,
        attempts,
        reason,
        deadLetteredAt: nowMs,
        lastLease,
      },
    }));
    this.#deps.onAppended(dlq.name);
  }

  /** A message reached Commit or DLQ: in a FIFO group its message group moves on (P5). */
  #finished(group: GroupRuntime, address: DeliveryAddress): void {
    if (!group.config.fifo) return;
    const messageGroup = this.#deps.topics.getMessage(address.topic, address.offset)?.messageGroup;
    if (messageGroup === undefined) return;
    group.fifoHeads.release(address.topic, messageGroup, address.offset);
    group.wake();
  }

  /**
   * A verdict both machines know (`succeeded`, `deadLettered`) for whichever machine drives the
   * record; when core accepts it, the lease ends: its deadline leaves the schedule or the push
   * lease table.
   */
  #settleLease(
    group: GroupRuntime,
    record: DeliveryRecord,
    handle: ReceiptHandle,
    event: Extract<PushEvent | SimpleEvent, { readonly type: 'succeeded' | 'deadLettered' }>,
  ) {
    const result =
      record.consumer === 'simple'
        ? simpleTransition(record.state, event, group.config)
        : pushTransition(record.state, event, this.#pushContext(group));
    if (!result.ok) return result;
    if (record.scheduleKey) this.#deps.scheduler().remove(record.scheduleKey);
    if (record.consumer === 'push') this.#deps.pushLeases().remove(handle);
    return result;
  }

  #find(handle: ReceiptHandle): Found | { readonly ok: false; readonly error: BrokerError } {
    const group = this.#deps.groups.get(handle.group);
    const record = group ? this.#deps.records.get(handle) : undefined;
    if (!group || !record) {
      return {
        ok: false,
        error: BrokerError.of(
          'INVALID_RECEIPT_HANDLE',
          'the receipt handle is unknown or its message is already settled',
        ),
      };
    }
    return { ok: true, group, record };
  }

  #findPush(
    handle: ReceiptHandle,
    operation: string,
  ):
    | {
        readonly ok: true;
        readonly group: GroupRuntime;
        readonly record: DeliveryRecord & { consumer: 'push' };
      }
    | { readonly ok: false; readonly error: BrokerError } {
    const found = this.#find(handle);
    if (!found.ok) return found;
    if (found.record.consumer !== 'push') {
      return {
        ok: false,
        error: BrokerError.of('BAD_REQUEST', `${operation} applies to push deliveries only`),
      };
    }
    return { ok: true, group: found.group, record: found.record };
  }

  #pushContext(group: GroupRuntime) {
    return {
      retryPolicy: group.config.retryPolicy,
      maxRetries: group.config.maxRetries,
      random: this.#deps.random,
    };
  }

  #recordHistory(
    address: DeliveryAddress,
    record: DeliveryRecord,
    result: HistoryRecord['result'],
    reason?: string,
  ): void {
    const state: PushState | SimpleState = record.state;
    if (state.state !== 'inflight') return;
    const nowMs = this.#deps.clock.now();
    void this.#deps.store.appendHistory(record.messageId, {
      group: address.group,
      topic: address.topic,
      offset: address.offset,
      lease: state.lease,
      deliveryAttempt: state.deliveryAttempt,
      consumer: record.consumer,
      ...(record.consumerId === undefined ? {} : { consumerId: record.consumerId }),
      deliveredAt: record.deliveredAt ?? nowMs,
      settledAt: nowMs,
      result,
      ...(reason === undefined ? {} : { reason }),
    });
  }
}

function sameKey(a: readonly unknown[] | undefined, b: readonly unknown[]): boolean {
  return a !== undefined && a.length === b.length && a.every((part, i) => part === b[i]);
}

/** Core's refusal, as the error the client receives. */
export function rejectionError(rejection: Rejection<string, string>): BrokerError {
  if (rejection.reason === 'invalidEvent') return BrokerError.of('BAD_REQUEST', rejection.message);
  return BrokerError.of(
    'INVALID_RECEIPT_HANDLE',
    `the receipt handle is no longer valid: ${rejection.message}`,
  );
}
