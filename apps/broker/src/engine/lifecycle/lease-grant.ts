import type { Clock, Random } from '@ricochet/core';
import type { DeliveredMessage } from '@ricochet/protocol';
import type { ReadyCandidate } from '../dispatch/ready-source.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { toDeliveredMessage } from './delivered-message.js';
import type { EffectApplier } from './effect-applier.js';
import { readyStateOf } from './lifecycle-context.js';
import { drivePush, driveSimple } from './lifecycle-driver.js';
import { encodeReceiptHandle } from './receipt-handle.js';

export interface LeaseGrantDeps {
  readonly clock: Clock;
  readonly random: Random;
  readonly applier: EffectApplier;
}

/**
 * Hands Ready messages to consumers: core's `delivered` event for the group's machine, carried
 * out by the applier, and the message as the consumer receives it, with a receipt handle that
 * names the new lease.
 */
export class LeaseGrant {
  readonly #deps: LeaseGrantDeps;

  constructor(deps: LeaseGrantDeps) {
    this.#deps = deps;
  }

  /** Lease to a push subscription for the group's consumption timeout (P2). */
  toPush(
    group: GroupRuntime,
    candidate: ReadyCandidate,
    subscriptionId: number,
    consumerId: string,
    heldBytes?: number,
  ): DeliveredMessage | undefined {
    const ready = readyStateOf(candidate.record);
    if (!ready) return undefined;
    const event = {
      type: 'delivered',
      atMs: this.#deps.clock.now(),
      leaseDurationMs: group.config.consumptionTimeoutMs,
    } as const;
    const moving = {
      group,
      address: candidate.address,
      before: candidate.record,
      messageId: candidate.message.messageId,
      holder: { consumerId, subscriptionId, heldBytes },
    };
    const result = drivePush(this.#deps, moving, ready, event);
    // A delivery always starts a lease (core's `startLease`); the check narrows the state's type.
    if (!result.ok || result.state.state !== 'inflight') return undefined;
    return this.#delivered(candidate, result.state.lease, result.state.deliveryAttempt);
  }

  /** Lease to a simple consumer until now + `invisibleDurationMs` (S2). */
  toSimple(
    group: GroupRuntime,
    candidate: ReadyCandidate,
    invisibleDurationMs: number,
    consumerId: string,
  ): DeliveredMessage | undefined {
    const ready = readyStateOf(candidate.record);
    if (!ready) return undefined;
    const event = { type: 'delivered', atMs: this.#deps.clock.now(), invisibleDurationMs } as const;
    const moving = {
      group,
      address: candidate.address,
      before: candidate.record,
      messageId: candidate.message.messageId,
      holder: { consumerId },
    };
    const result = driveSimple(this.#deps, moving, ready, event);
    if (!result.ok || result.state.state !== 'inflight') return undefined;
    return this.#delivered(candidate, result.state.lease, result.state.deliveryAttempt);
  }

  #delivered(candidate: ReadyCandidate, lease: number, deliveryAttempt: number): DeliveredMessage {
    const { group, topic, offset } = candidate.address;
    // Fields named, not spread: this runs for every delivery.
    const handle = encodeReceiptHandle({ kind: 'clustering', group, topic, offset, lease });
    return toDeliveredMessage(candidate.message, deliveryAttempt, handle);
  }
}
