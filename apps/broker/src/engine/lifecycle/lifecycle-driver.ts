import {
  type PushEvent,
  type PushState,
  type PushTransition,
  pushTransition,
  type Random,
  type SimpleEvent,
  type SimpleState,
  type SimpleTransition,
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
  });
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
  });
  return result;
}
