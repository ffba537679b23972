import type { BreakerStateName, Clock, GroupPauseTransition } from '@ricochet/core';
import type { BrokerMetrics } from '../broker-metrics.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';

export interface GroupPauseApplierDeps {
  readonly clock: Clock;
  readonly groups: GroupRegistry;
  readonly metrics: BrokerMetrics;
  /** One log line per move of a group's breaker (an operator sees a storm pause it); none if absent. */
  readonly onNotice?: ((message: string) => void) | undefined;
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
 * its next probe is due. Only the {@link EffectApplier} holds one.
 */
export class GroupPauseApplier {
  readonly #deps: GroupPauseApplierDeps;
  readonly #wake: (group: GroupRuntime) => void;
  /** Per group, the timer that wakes it for its breaker's next probe. */
  readonly #probeTimers = new Map<GroupRuntime, { readonly atMs: number; readonly timer: NodeJS.Timeout }>();

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
    if (wasHolding && !manuallyPaused && breaker.state === 'closed') this.#wake(group);
  }

  /**
   * Wake the group at `atMs`, when its open breaker lets a probe go. Also asked for a group found
   * open after a restart, the first time a consumer asks it for messages.
   */
  wakeAt(group: GroupRuntime, atMs: number): void {
    const current = this.#probeTimers.get(group);
    if (current && current.atMs <= atMs) return;
    if (current) clearTimeout(current.timer);
    const timer = setTimeout(
      () => {
        this.#probeTimers.delete(group);
        group.wake();
      },
      Math.max(0, atMs - this.#deps.clock.now()),
    );
    timer.unref();
    this.#probeTimers.set(group, { atMs, timer });
  }
}
