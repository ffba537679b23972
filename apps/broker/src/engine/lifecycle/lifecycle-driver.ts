import {
  admitDelivery,
  type DeliveryEffect,
  decidePushRun,
  decideSimpleRun,
  type GroupPauseEvent,
  type GroupPauseTransition,
  groupPauseTransition,
  type PushEvent,
  type PushEventType,
  type PushState,
  type PushTransition,
  pushTransition,
  type Random,
  type RunDecision,
  type RunSettle,
  type SimpleEvent,
  type SimpleEventType,
  type SimpleState,
  type SimpleTransition,
  type StormOutcome,
  simpleTransition,
} from '@ricochet/core';
import type { DeliveryAddress, DeliveryRecord } from '../../store/records.js';
import type { GroupRuntime } from '../model/group-registry.js';
import type { EffectApplier, LeaseHolder } from './effect-applier.js';
import { pushContextOf, simpleContextOf } from './lifecycle-context.js';

/**
 * Core decides, the applier applies (DESIGN.md §1), written once: every event of a message's
 * lifecycle for a clustering group goes through {@link drivePush} or {@link driveSimple}, which ask
 * core's machine for the next state and its effects and, when core accepts the event, hand both to
 * the effect applier. Each event's source (`lease-grant`, `settlement`, `due-events`) only finds
 * the record and builds the event; a refusal comes back as core's result, and nothing is applied.
 */

/** The record an event moves, and who moves it: what the applier needs besides core's answer. */
export interface Moving {
  readonly group: GroupRuntime;
  readonly address: DeliveryAddress;
  /**
   * The record before the event, or `undefined` on a first delivery. A timer event's caller drops
   * the `scheduleKey` of the entry that fired.
   */
  readonly before: DeliveryRecord | undefined;
  readonly messageId: string;
  /** Who holds the lease a `delivered` event starts. */
  readonly holder?: LeaseHolder;
  /** The principal whose ack, nack or release this is, for the history. */
  readonly settledBy?: string | undefined;
}

/** What driving takes from the engine: the one writer of effects, and core's jitter. */
export interface LifecycleDeps {
  readonly applier: EffectApplier;
  readonly random: Random;
}

/** Feed the push machine `event` from `from`; when core accepts it, apply the change. */
export function drivePush(
  deps: LifecycleDeps,
  moving: Moving,
  from: PushState,
  event: PushEvent,
): PushTransition {
  const result = pushTransition(from, event, pushContextOf(moving.group, deps.random));
  if (!result.ok) return result;
  // Written out in full rather than spread from `moving`: an object spread plus fields costs
  // microseconds per event in profiles, on the path every delivery and ack takes.
  deps.applier.apply({
    group: moving.group,
    address: moving.address,
    before: moving.before,
    messageId: moving.messageId,
    eventType: event.type,
    effects: result.effects,
    consumer: 'push',
    next: result.state,
    holder: moving.holder,
    settledBy: moving.settledBy,
    atMs: event.atMs,
  });
  feedStormRule(deps, moving, event, result.state.lease, result.effects);
  noteHeldRetry(deps, moving, event.atMs, 'push', result.state);
  return result;
}

/** Feed the simple machine `event` from `from`; when core accepts it, apply the change. */
export function driveSimple(
  deps: Pick<LifecycleDeps, 'applier'>,
  moving: Moving,
  from: SimpleState,
  event: SimpleEvent,
): SimpleTransition {
  const result = simpleTransition(from, event, simpleContextOf(moving.group));
  if (!result.ok) return result;
  deps.applier.apply({
    group: moving.group,
    address: moving.address,
    before: moving.before,
    messageId: moving.messageId,
    eventType: event.type,
    effects: result.effects,
    consumer: 'simple',
    next: result.state,
    holder: moving.holder,
    settledBy: moving.settledBy,
    atMs: event.atMs,
  });
  feedStormRule(deps, moving, event, result.state.lease, result.effects);
  noteHeldRetry(deps, moving, event.atMs, 'simple', result.state);
  return result;
}

/**
 * Settle a run of push deliveries of one group on one topic (issue 43): core decides the whole run
 * in one step, exactly as {@link drivePush} would decide each settle in turn; each accepted
 * transition is applied and fed to the storm rule in the run's order, as one by one, and the run's
 * counters and success marks are carried out once at its end. `movings[i]` is the record
 * `settles[i]` moves; the offsets are distinct (the caller's runs rise), so applying one settle
 * never changes the record another of the run starts from.
 */
export function drivePushRun(
  deps: LifecycleDeps,
  group: GroupRuntime,
  topic: string,
  movings: readonly Moving[],
  settles: readonly RunSettle<PushState, PushEvent>[],
): RunDecision<PushState, PushEventType> {
  const decision = decidePushRun(settles, pushContextOf(group, deps.random));
  applyRun(deps, group, topic, movings, settles, decision, 'push');
  return decision;
}

/** Settle a run of simple leases of one group on one topic, as {@link drivePushRun} does push deliveries. */
export function driveSimpleRun(
  deps: Pick<LifecycleDeps, 'applier'>,
  group: GroupRuntime,
  topic: string,
  movings: readonly Moving[],
  settles: readonly RunSettle<SimpleState, SimpleEvent>[],
): RunDecision<SimpleState, SimpleEventType> {
  const decision = decideSimpleRun(settles, simpleContextOf(group));
  applyRun(deps, group, topic, movings, settles, decision, 'simple');
  return decision;
}

function applyRun<TState extends PushState | SimpleState>(
  deps: Pick<LifecycleDeps, 'applier'>,
  group: GroupRuntime,
  topic: string,
  movings: readonly Moving[],
  settles: readonly RunSettle<TState, PushEvent | SimpleEvent>[],
  decision: RunDecision<TState, string>,
  consumer: 'push' | 'simple',
): void {
  for (let i = 0; i < settles.length; i++) {
    const result = decision.transitions[i] as RunDecision<TState, string>['transitions'][number];
    if (!result.ok) continue;
    const moving = movings[i] as Moving;
    const { event } = settles[i] as RunSettle<TState, PushEvent | SimpleEvent>;
    // Written out in full, as in drivePush: no spread on the path every ack takes.
    deps.applier.apply(
      consumer === 'push'
        ? {
            group: moving.group,
            address: moving.address,
            before: moving.before,
            messageId: moving.messageId,
            eventType: event.type,
            effects: result.effects,
            consumer,
            next: result.state as PushState,
            settledBy: moving.settledBy,
            inRun: true,
            atMs: event.atMs,
          }
        : {
            group: moving.group,
            address: moving.address,
            before: moving.before,
            messageId: moving.messageId,
            eventType: event.type,
            effects: result.effects,
            consumer,
            next: result.state as SimpleState,
            settledBy: moving.settledBy,
            inRun: true,
            atMs: event.atMs,
          },
    );
    feedStormRule(deps, moving, event, result.state.lease, result.effects);
    noteHeldRetry(deps, moving, event.atMs, consumer, result.state);
  }
  deps.applier.finishRun(group, topic, decision);
}

/**
 * A message made Ready again (a push retry that fell due, a released push delivery, a simple
 * lease that expired) while its group holds its deliveries (DESIGN.md §11) is postponed: its
 * history says so, once, here. After the storm rule has seen the outcome, so a simple lease whose
 * expiry opens the breaker is held by it. A first delivery held is no retry and leaves no entry.
 */
function noteHeldRetry(
  deps: Pick<LifecycleDeps, 'applier'>,
  moving: Moving,
  atMs: number,
  consumer: 'push' | 'simple',
  state: PushState | SimpleState,
): void {
  if (state.state !== 'ready' || state.lease === 0) return;
  if (admitDelivery(moving.group.pause, atMs).type !== 'hold') return;
  deps.applier.groupPause.recordHeld({
    address: moving.address,
    messageId: moving.messageId,
    consumer,
    lease: state.lease,
    deliveryAttempt: state.failures + 1,
    atMs,
  });
}

/**
 * Feed the group's failure-storm rule (DESIGN.md §11) what a message's transition says of its
 * delivery: a delivery that goes out while the breaker lets a probe go is that probe, and an
 * ended delivery is an outcome. Core decides; the applier keeps the state and stores it.
 */
function feedStormRule(
  deps: Pick<LifecycleDeps, 'applier'>,
  moving: Moving,
  event: PushEvent | SimpleEvent,
  lease: number,
  effects: readonly DeliveryEffect[],
): void {
  const { group, address } = moving;
  // With the rule off, core collects no outcome and its breaker stays closed (a PUT that turns the
  // rule off closes it first): feeding it would only allocate, on the path every delivery and ack
  // takes. A manual pause needs no outcomes either.
  if (group.config.pauseOnFailures === undefined) return;
  if (event.type === 'delivered') {
    if (admitDelivery(group.pause, event.atMs).type === 'probe') {
      driveGroupPause(deps, group, {
        type: 'probeSent',
        deliveryId: deliveryIdOf(address, lease),
        atMs: event.atMs,
      });
    }
    return;
  }
  for (const effect of effects) {
    if (effect.type !== 'recordOutcome') continue;
    const outcome = stormOutcomeOf(effect.outcome, event.type);
    driveGroupPause(deps, group, {
      type: 'outcome',
      outcome,
      deliveryId: deliveryIdOf(address, effect.lease),
      atMs: event.atMs,
    });
  }
}

/** Feed the group's failure-storm rule one event; when it moves, the applier carries the move out. */
export function driveGroupPause(
  deps: Pick<LifecycleDeps, 'applier'>,
  group: GroupRuntime,
  event: GroupPauseEvent,
): GroupPauseTransition {
  const transition = groupPauseTransition(group.pause, event, group.config.pauseOnFailures);
  if (transition.state !== group.pause) deps.applier.groupPause.apply(group, transition);
  return transition;
}

/** One delivery of one message to the group: its address and lease. */
function deliveryIdOf(address: DeliveryAddress, lease: number): string {
  return `${address.topic}\u0000${address.offset}\u0000${lease}`;
}

/**
 * How an ended delivery counts for the failure-storm rule (docs/semantics.md F1): a dead-letter
 * after the last attempt is that attempt's failure; a dead-letter asked for by the consumer (D3),
 * a release (C2) and a postponement (X4) are not failures.
 */
function stormOutcomeOf(outcome: string, eventType: string): StormOutcome {
  switch (outcome) {
    case 'committed':
      return 'success';
    case 'released':
    // X4: a postponement is no failure; like a release, it says nothing of what is behind the consumer.
    case 'postponed':
      return 'release';
    case 'deadLettered':
      return eventType === 'deadLettered' ? 'deadLetterNow' : 'failure';
    default:
      // failed, timedOut (P2), leaseExpired (S5)
      return 'failure';
  }
}
