import type { BreakerStateName, Clock, GroupPauseTransition } from '@ricochet/core';
import type { BrokerStore } from '../../store/broker-store.js';
import type { DeliveryAddress } from '../../store/records.js';
import type { BrokerMetrics } from '../broker-metrics.js';
import type { EngineEventSink } from '../engine-events.js';
import type { DeliveryRecords } from '../model/delivery-records.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import type { TimerHandle, TimerService } from '../timers/timer-service.js';

/** The reason of the history entry of a retry a paused group postponed. */
export const HELD_REASON = 'group paused';

/** A message made Ready again while its group holds its deliveries: what its history entry says. */
export interface HeldRetry {
  readonly address: DeliveryAddress;
  readonly messageId: string;
  readonly consumer: 'push' | 'simple';
  /** The lease of the message's last delivery, the one whose retry is held. */
  readonly lease: number;
  /** The attempt that waits (P6). */
  readonly deliveryAttempt: number;
  /** When the retry fell due, and was held instead. */
  readonly atMs: number;
}

export interface GroupPauseApplierDeps {
  readonly store: BrokerStore;
  readonly records: DeliveryRecords;
  readonly clock: Clock;
  /** The broker's timers (a virtual clock's in `@ricochet/testing`): a probe's wake-up is one. */
  readonly timers: TimerService;
  readonly groups: GroupRegistry;
  readonly metrics: BrokerMetrics;
  /** One log line per move of a group's breaker (an operator sees a storm pause it); none if absent. */
  readonly onNotice?: ((message: string) => void) | undefined;
  /** X7: the group began or stopped holding its deliveries, and why; the DLQ's copies too. */
  readonly onEvent?: EngineEventSink | undefined;
}

/** What a breaker's new state means for the group's deliveries, for its log line. */
const BREAKER_MEANING: Readonly<Record<BreakerStateName, string>> = {
  open: ': deliveries held',
  halfOpen: ': one probe delivery let through',
  closed: ': deliveries resume',
};

/**
 * The effect applier's hand for a group's failure-storm rule (DESIGN.md §11): it keeps the state
 * core decided, stores it with the group's record when the breaker or the manual pause changed (so
 * it survives a restart), counts the move, and wakes the group when it may deliver again or when
 * its next probe is due, and writes the history entry of a retry the group held. Only the
 * {@link EffectApplier} holds one.
 */
export class GroupPauseApplier {
  readonly #deps: GroupPauseApplierDeps;
  readonly #wake: (group: GroupRuntime) => void;
  /** Per group, the timer that wakes it for its breaker's next probe; {@link close} cancels them. */
  readonly #probeTimers = new Map<GroupRuntime, { readonly atMs: number; readonly timer: TimerHandle }>();
  #closed = false;

  constructor(deps: GroupPauseApplierDeps, wake: (group: GroupRuntime) => void) {
    this.#deps = deps;
    this.#wake = wake;
  }

  apply(group: GroupRuntime, transition: GroupPauseTransition): void {
    const before = group.pause;
    group.pause = transition.state;
    if (transition.effects.length === 0) return;
    for (const effect of transition.effects) {
      if (effect.type === 'breakerTransitioned') {
        this.#deps.metrics.breakerTransitioned(group.name, effect.from, effect.to);
        this.#deps.onNotice?.(
          `group ${group.name}: failure-storm breaker ${effect.from} → ${effect.to}${BREAKER_MEANING[effect.to]}`,
        );
      }
    }
    const { breaker, manuallyPaused } = transition.state;
    this.#deps.metrics.groupPaused(group.name, 'manual', manuallyPaused);
    this.#deps.metrics.groupPaused(group.name, 'failures', breaker.state !== 'closed');
    this.#deps.groups.savePause(group);
    if (breaker.state === 'open') this.wakeAt(group, breaker.nextProbeAtMs);
    const wasHolding = before.manuallyPaused || before.breaker.state !== 'closed';
    const holds = manuallyPaused || breaker.state !== 'closed';
    if (wasHolding && !holds) this.#wake(group);
    if (!wasHolding && holds) this.#recordHeldReady(group);
    if (wasHolding !== holds) this.#emitHolding(group, transition, holds);
  }

  /** X7: `group_paused` or `group_resumed`, by hand or by the failure-storm rule, with why. */
  #emitHolding(group: GroupRuntime, transition: GroupPauseTransition, holds: boolean): void {
    if (!this.#deps.onEvent) return;
    const byHand = transition.effects.some((effect) => effect.type === 'manualPauseChanged');
    const moved = transition.effects.find((effect) => effect.type === 'breakerTransitioned');
    this.#deps.onEvent({
      type: holds ? 'group_paused' : 'group_resumed',
      group: group.name,
      atMs: this.#deps.clock.now(),
      cause: byHand ? 'manual' : 'failures',
      why:
        !byHand && moved?.type === 'breakerTransitioned'
          ? `failure-storm breaker ${moved.from} → ${moved.to}${BREAKER_MEANING[moved.to]}`
          : holds
            ? 'paused by hand'
            : 'resumed by hand',
    });
  }

  /**
   * The group has just begun to hold: every retry already Ready in its queue waits from now, and
   * its history says so as a retry that falls due during the pause does (see {@link recordHeld}).
   * A message Ready for its first delivery (parked behind a FIFO head, a delay that fell due) is
   * no retry. Bounded by the ready queue's limit.
   */
  #recordHeldReady(group: GroupRuntime): void {
    const atMs = this.#deps.clock.now();
    for (const ref of group.readyQueue) {
      const address = { group: group.name, topic: ref.topic, offset: ref.offset };
      const record = this.#deps.records.get(address);
      if (record?.state.state !== 'ready' || record.state.lease === 0) continue;
      this.recordHeld({
        address,
        messageId: record.messageId,
        consumer: record.consumer,
        lease: record.state.lease,
        deliveryAttempt: record.state.failures + 1,
        atMs,
      });
    }
  }

  /**
   * Record in the message's history that its retry fell due while the group held it (DESIGN.md
   * §11): `held`, reason `group paused`, so `GET /v1/messages/:id` explains the late attempt that
   * follows. Written once per postponement: the message then waits Ready in the group's queue,
   * whatever the probes meanwhile, until it goes. History is keyed by lease, each delivery's being
   * > 0; this entry takes the negated lease of the delivery whose retry it holds, so it never
   * replaces a delivery's entry and a restart that finds the retry due again rewrites the same one.
   */
  recordHeld(held: HeldRetry): void {
    const { address } = held;
    void this.#deps.store.appendHistory(held.messageId, {
      group: address.group,
      topic: address.topic,
      offset: address.offset,
      lease: -held.lease,
      deliveryAttempt: held.deliveryAttempt,
      consumer: held.consumer,
      deliveredAt: held.atMs,
      settledAt: held.atMs,
      result: 'held',
      reason: HELD_REASON,
    });
  }

  /**
   * Wake the group at `atMs`, when its open breaker lets a probe go. Also asked for a group found
   * open after a restart, the first time a consumer asks it for messages.
   */
  wakeAt(group: GroupRuntime, atMs: number): void {
    if (this.#closed) return;
    const current = this.#probeTimers.get(group);
    if (current && current.atMs <= atMs) return;
    current?.timer.cancel();
    // On the broker's timers, not Node's: a virtual clock wakes the probe, and close() cancels it.
    const timer = this.#deps.timers.setTimer(atMs - this.#deps.clock.now(), () => {
      this.#probeTimers.delete(group);
      group.wake();
    });
    this.#probeTimers.set(group, { atMs, timer });
  }

  /** The broker is closing: cancel every probe's wake-up, and arm none from now on. */
  close(): void {
    this.#closed = true;
    for (const { timer } of this.#probeTimers.values()) timer.cancel();
    this.#probeTimers.clear();
  }
}
