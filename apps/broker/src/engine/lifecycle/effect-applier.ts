import {
  type DeliveryEffect,
  type GroupCounter,
  initialReadyState,
  type PushState,
  type RunDecision,
  redrivenState,
  type SimpleState,
} from '@ricochet/core';
import type {
  DeliveryAddress,
  DeliveryRecord,
  HistoryRecord,
  ScheduleKey,
  StoredMessage,
} from '../../store/records.js';
import { copyToDeadLetterQueue } from '../dead-letter/dead-letter-copy.js';
import type { AppendWaker } from '../log/append-waker.js';
import type { GroupRuntime } from '../model/group-registry.js';
import type { ReadyLane, ReadyRef } from '../model/ready-queue.js';
import type { TopicRegistry } from '../model/topic-registry.js';
import type { PushLeaseTable } from '../timers/push-lease-table.js';
import type { Scheduler } from '../timers/scheduler.js';
import { GroupPauseApplier, type GroupPauseApplierDeps } from './group-pause-applier.js';

/** One accepted transition of a message for a clustering group, with core's effects, to carry out. */
export type DeliveryChange = {
  readonly group: GroupRuntime;
  readonly address: DeliveryAddress;
  /**
   * The record before the event, or `undefined` when the message has none yet (its first
   * delivery). A timer event's caller drops the `scheduleKey` of the entry that fired.
   */
  readonly before: DeliveryRecord | undefined;
  readonly messageId: string;
  readonly eventType: string;
  readonly effects: readonly DeliveryEffect[];
  /** Who holds the lease a `delivered` event starts. */
  readonly holder?: LeaseHolder | undefined;
  /** The principal whose ack, nack or release this is, for the history; none for the broker's own events. */
  readonly settledBy?: string | undefined;
  /**
   * One settle of a run (issue 43): its counter moves and its success mark are the run's, carried
   * out once for the whole run by {@link EffectApplier.finishRun}.
   */
  readonly inRun?: boolean | undefined;
  /**
   * When the event was decided, if its caller read the clock for it (a run reads it once for all
   * its settles; a single event carries its own): its history's `settledAt`, and a delivery's
   * `deliveredAt`, so the record agrees with the times core drew from the same instant (the
   * retry's due time, and the first delivery that X2's budget counts from). A second clock read
   * could fall milliseconds later on a loaded loop, and the history would then show a retry budget
   * spent early. Without it, the clock is read when the outcome is recorded.
   */
  readonly atMs?: number | undefined;
} & (
  | { readonly consumer: 'push'; readonly next: PushState }
  | { readonly consumer: 'simple'; readonly next: SimpleState }
);

/** What {@link EffectApplier.finishRun} carries out of core's decision of a run of settles. */
export type RunOutcome = Pick<RunDecision<{ readonly state: string }, string>, 'committed' | 'counterMoves'>;

/** The counters core's `adjustCounter` effects move. */
const GROUP_COUNTERS: readonly GroupCounter[] = ['inflight', 'waitingRetry', 'committed', 'deadLettered'];

/** A record being built, field by field. */
type Writable<T> = { -readonly [K in keyof T]: T[K] };

/** The consumer a new lease goes to. */
export interface LeaseHolder {
  readonly consumerId: string;
  /** Push leases: the subscription whose session releases them when it ends (C2). */
  readonly subscriptionId?: number;
  /**
   * Push leases through a credit pool with a byte limit (`subscribe.maxCachedBytes`): the bytes
   * the delivery counts against it, given back when the lease ends.
   */
  readonly heldBytes?: number | undefined;
}

/** What the applier needs: its failure-storm hand's parts, and the timers and queues it writes. */
export interface EffectApplierDeps extends GroupPauseApplierDeps {
  readonly topics: TopicRegistry;
  readonly scheduler: Scheduler;
  readonly pushLeases: PushLeaseTable;
  readonly appendWaker: AppendWaker;
}

/**
 * Carries out what `@ricochet/core` decided, and decides nothing itself. The only writer of
 * delivery records, schedule entries, push leases, ready queues, DLQ copies, delivery history and
 * group counters: whatever moves a message (a delivery, a result, a due timer, a recovery, a
 * redrive) ends here, so what the broker holds always follows the lifecycle's state.
 *
 * Group counters and wake-ups are gathered per turn and flushed once, so a batch of 256 acks costs
 * one counters write and one wake-up per group.
 */
export class EffectApplier {
  readonly #deps: EffectApplierDeps;
  readonly #dirtyCounters = new Set<GroupRuntime>();
  readonly #toWake = new Set<GroupRuntime>();
  #flushQueued = false;

  /**
   * The applier's hand for the groups' failure-storm rule (DESIGN.md §11): the rule's moves, the
   * wake-up for a probe, and the history entry of a retry a paused group holds.
   */
  readonly groupPause: GroupPauseApplier;

  constructor(deps: EffectApplierDeps) {
    this.#deps = deps;
    this.groupPause = new GroupPauseApplier(deps, (group) => this.#wake(group));
  }

  /** Carry out one transition: its effects in core's order, then the record it leaves. */
  apply(change: DeliveryChange): void {
    const { group, address } = change;
    let scheduleKey = change.before?.scheduleKey;
    for (const effect of change.effects) {
      switch (effect.type) {
        case 'startLeaseTimer':
          if (change.consumer === 'simple') {
            scheduleKey = this.#deps.scheduler.add(
              group.name,
              effect.deadlineMs,
              address.topic,
              address.offset,
              { kind: 'leaseExpiry', lease: effect.lease },
              // With the lease's record: written behind for a new lease, at once for a changed one.
              change.eventType === 'delivered' ? 'deferred' : 'now',
            );
          } else {
            this.#deps.pushLeases.add({
              address,
              lease: effect.lease,
              deadlineMs: effect.deadlineMs,
              subscriptionId: change.holder?.subscriptionId ?? 0,
              heldBytes: change.holder?.heldBytes,
            });
          }
          break;
        case 'cancelLeaseTimer':
          if (change.consumer === 'push') this.#deps.pushLeases.remove(address);
          else if (scheduleKey) this.#deps.scheduler.remove(scheduleKey);
          scheduleKey = undefined;
          break;
        case 'scheduleRetry':
          // Recoverable: the WaitingRetry record written at once names the entry (its scheduleKey),
          // and recovery schedules it again, so a retry due soon is kept in memory, not written.
          scheduleKey = this.#deps.scheduler.add(
            group.name,
            effect.atMs,
            address.topic,
            address.offset,
            { kind: 'retryDue' },
            'recoverable',
          );
          this.#deps.metrics.retried(group.name);
          break;
        case 'requeue':
          // Only a delivered message is requeued by core: a retry that fell due, a release, a
          // lease that expired. It goes ahead of the messages never delivered (P3's order).
          this.#requeue(group, address, 'again');
          break;
        case 'recordOutcome':
          this.#recordOutcome(change, effect);
          break;
        case 'deadLetter':
          copyToDeadLetterQueue(this.#deps, group, address, effect);
          break;
        case 'releaseFifoKey':
          this.#releaseFifoKey(group, address);
          break;
        case 'adjustCounter':
          if (change.inRun) break;
          this.#adjust(group, effect.counter, effect.by);
          if (effect.by > 0 && effect.counter === 'committed') this.#deps.metrics.acked(group.name);
          if (effect.by > 0 && effect.counter === 'deadLettered') this.#deps.metrics.deadLettered(group.name);
          break;
      }
    }
    if (change.eventType === 'delivered') this.#deps.metrics.delivered(group.name);
    this.#writeRecord(change, scheduleKey);
  }

  /**
   * Finish a run of settles of `group`'s messages on `topic` whose transitions went through
   * {@link apply} one by one (`inRun`): move each group counter once by the run's net move, and
   * mark the run's successes, when the group keeps no history of them, as runs of offsets written
   * with the topic's stored cursor in one write at the end of the turn. What one-by-one applying
   * would do, summed: the counters and the marks are read only after the turn.
   */
  finishRun(group: GroupRuntime, topic: string, decision: RunOutcome): void {
    const { counterMoves, committed } = decision;
    for (const counter of GROUP_COUNTERS) {
      const by = counterMoves[counter];
      if (by !== 0) group[counter] += by;
    }
    if (counterMoves.committed !== 0 || counterMoves.deadLettered !== 0) this.#countersChanged(group);
    // Terminal counters only ever rise: their moves are the run's acks and dead-letters.
    if (counterMoves.committed > 0) this.#deps.metrics.acked(group.name, counterMoves.committed);
    if (counterMoves.deadLettered > 0) this.#deps.metrics.deadLettered(group.name, counterMoves.deadLettered);
    if (committed.length > 0 && this.#marksSuccessesOf(group, topic)) {
      this.#deps.groups.markSucceededRuns(group, topic, committed);
      this.#queueFlush();
    }
  }

  /**
   * Move group counters by core's `adjustCounter` effects only: a broadcast transition's, whose
   * instance state, leases and metrics the broadcast dispatcher keeps itself.
   */
  applyCounters(group: GroupRuntime, effects: readonly DeliveryEffect[]): void {
    for (const effect of effects) {
      if (effect.type === 'adjustCounter') this.#adjust(group, effect.counter, effect.by);
    }
  }

  /**
   * After a restart, take on a stored record as it stands: count its state, queue it when Ready
   * (in the `again` line when a delivery of it failed or was released, as for a Ready state core
   * requeues; a message never delivered, or redriven with its attempts given back, in `first`),
   * and hold its FIFO message group while it is Inflight or WaitingRetry (P5).
   */
  adopt(group: GroupRuntime, address: DeliveryAddress, record: DeliveryRecord): void {
    const state = record.state.state;
    if (state === 'inflight' || state === 'waitingRetry') {
      this.#adjust(group, state, 1);
      const messageGroup = group.config.fifo ? this.#messageGroupOf(address) : undefined;
      if (messageGroup !== undefined) group.fifoGate.claim(address.topic, messageGroup, address.offset);
    }
    if (state === 'ready') {
      const { failures, releases } = record.state;
      this.#requeue(group, address, failures + releases === 0 ? 'first' : 'again');
    }
  }

  /**
   * T1: a delay message's time has come for this group. It becomes Ready with a record of its own:
   * the group's cursor passed it long ago and its schedule entry is now taken, so without the
   * record a restart would forget it. Returns false when the message is gone or already tracked.
   */
  admitDelayed(group: GroupRuntime, address: DeliveryAddress): boolean {
    const message = this.#deps.topics.getMessage(address.topic, address.offset);
    if (!message || this.#deps.records.get(address)) return false;
    const record: DeliveryRecord = {
      consumer: 'push',
      state: initialReadyState(),
      messageId: message.messageId,
    };
    this.#deps.records.put(address, record, 'now');
    this.#requeue(group, address, 'first');
    return true;
  }

  /** A record left over in a terminal state (a crash mid-way): it goes. */
  discard(address: DeliveryAddress): void {
    this.#deps.records.delete(address);
  }

  /** T1: park a delay message for this group until it is due. */
  scheduleDelay(group: GroupRuntime, message: StoredMessage): void {
    if (message.deliverAt === undefined) return;
    this.#deps.scheduler.add(group.name, message.deliverAt, message.topic, message.offset, {
      kind: 'delayDue',
    });
  }

  /** P5: hold a FIFO message as Ready behind the head of its message group (recorded, so a restart keeps it). */
  parkBehindFifoHead(
    group: GroupRuntime,
    address: DeliveryAddress,
    messageId: string,
    messageGroup: string,
  ): void {
    this.#deps.records.put(address, { consumer: 'push', state: initialReadyState(), messageId }, 'deferred');
    group.readyQueue.push({ topic: address.topic, offset: address.offset, messageGroup }, 'first');
  }

  /**
   * D2: make a dead-lettered message Ready again for its group only, with a fresh attempt count.
   * Returns false when the DLQ entry was redriven already or belongs to another group.
   */
  redrive(group: GroupRuntime, listed: StoredMessage): boolean {
    // The DLQ entry as it is now: a paced redrive works from a listing taken when it started, and
    // another redrive may have taken the entry since (and its message be consumed already).
    const { topics } = this.#deps;
    // Retention may have deleted the DLQ entry since the listing, or the message it names.
    if (topics.isExpired(listed.topic, listed.offset)) return false;
    const dlqMessage = topics.getMessage(listed.topic, listed.offset) ?? listed;
    const deadLetter = dlqMessage.deadLetter;
    if (!deadLetter || deadLetter.redrivenAt !== undefined || deadLetter.group !== group.name) return false;
    if (topics.isExpired(deadLetter.originTopic, deadLetter.originOffset)) return false;
    const address: DeliveryAddress = {
      group: group.name,
      topic: deadLetter.originTopic,
      offset: deadLetter.originOffset,
    };
    if (this.#deps.records.get(address)) return false;
    const record: DeliveryRecord = {
      consumer: 'push',
      state: redrivenState(deadLetter.lastLease),
      messageId: dlqMessage.messageId,
    };
    this.#deps.records.put(address, record, 'now');
    const redrivenAt = this.#deps.clock.now();
    topics.rewrite({ ...dlqMessage, deadLetter: { ...deadLetter, redrivenAt } });
    group.redriven++;
    this.#countersChanged(group);
    // Its attempts start over: it waits with the messages never delivered, not ahead of retries.
    this.#requeue(group, address, 'first');
    return true;
  }

  /** The ready-queue entry of a message; FIFO groups carry its message group along (P5). */
  readyRefOf(group: GroupRuntime, address: DeliveryAddress): ReadyRef {
    const messageGroup = group.config.fifo ? this.#messageGroupOf(address) : undefined;
    return messageGroup === undefined
      ? { topic: address.topic, offset: address.offset }
      : { topic: address.topic, offset: address.offset, messageGroup };
  }

  // ─── Effects ──────────────────────────────────────────────────────────────────────────────

  #requeue(group: GroupRuntime, address: DeliveryAddress, lane: ReadyLane): void {
    group.readyQueue.push(this.readyRefOf(group, address), lane);
    this.#wake(group);
  }

  #releaseFifoKey(group: GroupRuntime, address: DeliveryAddress): void {
    if (!group.config.fifo) return;
    const messageGroup = this.#messageGroupOf(address);
    if (messageGroup === undefined) return;
    group.fifoGate.release(address.topic, messageGroup, address.offset);
    this.#wake(group);
  }

  #recordOutcome(change: DeliveryChange, effect: Extract<DeliveryEffect, { type: 'recordOutcome' }>): void {
    const { address, before } = change;
    // A success, in a group keeping failures only: no entry, a mark (GroupRegistry.markSucceeded);
    // in a run, one of the run's marks, made at once by finishRun.
    if (change.inRun && effect.outcome === 'committed' && this.#marksSuccessesOf(change.group, address.topic))
      return;
    const nowMs = change.atMs ?? this.#deps.clock.now();
    if (effect.outcome === 'released') this.#deps.metrics.released(address.group);
    if (effect.outcome === 'leaseExpired') this.#deps.metrics.retried(address.group);
    const { groups } = this.#deps;
    const unrecorded = effect.outcome === 'committed' && groups.historyOf(change.group) === 'failures';
    if (unrecorded && groups.markSucceeded(change.group, address.topic, address.offset)) {
      this.#queueFlush();
      return;
    }
    // Built field by field (the store writes the fields in its own order): spreads of optional
    // fields cost an object each, on every settled delivery.
    const entry: Writable<HistoryRecord & { lease: number }> = {
      group: address.group,
      topic: address.topic,
      offset: address.offset,
      lease: effect.lease,
      deliveryAttempt: effect.deliveryAttempt,
      consumer: change.consumer,
      deliveredAt: before?.deliveredAt ?? nowMs,
      settledAt: nowMs,
      result: effect.outcome,
    };
    if (before?.consumerId !== undefined) entry.consumerId = before.consumerId;
    if (effect.reason !== undefined) entry.reason = effect.reason;
    if (effect.cause !== undefined) entry.cause = effect.cause;
    if (change.settledBy !== undefined) entry.principal = change.settledBy;
    void this.#deps.store.appendHistory(change.messageId, entry);
  }

  /** Whether a success of `group` on `topic` is a mark with its stored cursor rather than a history entry. */
  #marksSuccessesOf(group: GroupRuntime, topic: string): boolean {
    const { groups } = this.#deps;
    return groups.historyOf(group) === 'failures' && groups.canMark(group, topic);
  }

  #adjust(group: GroupRuntime, counter: GroupCounter, by: 1 | -1): void {
    group[counter] += by;
    if (counter === 'committed' || counter === 'deadLettered') this.#countersChanged(group);
  }

  /**
   * The record the transition leaves: none once terminal. Written at once: WaitingRetry, which
   * names its schedule entry (`scheduleKey`; the entry is written with it, or, due within the
   * scheduler's horizon, kept in memory only: recovery looks up the entries of the WaitingRetry
   * records due within that horizon and schedules again, or makes Ready, those it does not find,
   * and need not look up the entry of every pending retry); and a simple consumer's record after
   * any event but its delivery — a changed lease, which is answered once durable, and Ready after a
   * lease expired, whose schedule entry is gone with this turn. The rest waits for the write-behind
   * flush: push states, and a simple consumer's new lease, whose schedule entry is deferred with it
   * (most are acked first and never written). A crash before the flush costs a redelivery, never
   * a loss; a client's ack of a lease that was lost so gets 410.
   */
  #writeRecord(change: DeliveryChange, scheduleKey: ScheduleKey | undefined): void {
    const { address, next } = change;
    if (next.state === 'commit' || next.state === 'dlq') {
      this.#deps.records.delete(address);
      return;
    }
    const inflight = next.state === 'inflight';
    const consumerId = inflight ? (change.holder?.consumerId ?? change.before?.consumerId) : undefined;
    const deliveredAt = inflight
      ? change.eventType === 'delivered'
        ? (change.atMs ?? this.#deps.clock.now())
        : change.before?.deliveredAt
      : undefined;
    // Built field by field: this runs for every delivery and every result, where spreads showed
    // in profiles.
    const record: Writable<DeliveryRecord> =
      change.consumer === 'push'
        ? { consumer: 'push', state: change.next, messageId: change.messageId }
        : { consumer: 'simple', state: change.next, messageId: change.messageId };
    if (scheduleKey !== undefined) record.scheduleKey = scheduleKey;
    if (consumerId !== undefined) record.consumerId = consumerId;
    if (deliveredAt !== undefined) record.deliveredAt = deliveredAt;
    const simpleNotDelivered = change.consumer === 'simple' && change.eventType !== 'delivered';
    // A due retry's Ready is written behind: recovery makes a due WaitingRetry without its entry Ready.
    if (simpleNotDelivered || next.state === 'waitingRetry') {
      this.#deps.records.put(address, record, 'now');
    } else if (change.before === undefined) {
      this.#deps.records.putNew(address, record);
    } else {
      this.#deps.records.put(address, record, 'deferred');
    }
  }

  // ─── Once per turn ────────────────────────────────────────────────────────────────────────

  #countersChanged(group: GroupRuntime): void {
    this.#dirtyCounters.add(group);
    this.#queueFlush();
  }

  #wake(group: GroupRuntime): void {
    this.#toWake.add(group);
    this.#queueFlush();
  }

  /**
   * Write the success marks and counters this turn changed and wake the groups it made Ready
   * messages for. Runs by itself at the end of the turn; a caller about to await durability (a
   * settle batch) calls it first, so its answer waits for them too.
   */
  flushTurn(): void {
    this.#deps.groups.writeMarks();
    for (const group of this.#dirtyCounters) this.#deps.groups.saveCounters(group);
    this.#dirtyCounters.clear();
    const toWake = [...this.#toWake];
    this.#toWake.clear();
    for (const group of toWake) group.wake();
  }

  #queueFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      this.flushTurn();
    });
  }

  #messageGroupOf(address: DeliveryAddress): string | undefined {
    return this.#deps.topics.getMessage(address.topic, address.offset)?.messageGroup;
  }
}
