import type { BroadcastState } from '@ricochet/core';
import type { BroadcastInstanceRecord, DeliveryAddress } from '../../store/records.js';
import type { GroupRuntime } from '../model/group-registry.js';

/** A message an instance holds from its first delivery until it is consumed. */
export interface BroadcastDelivery {
  readonly topic: string;
  readonly offset: number;
  readonly messageId: string;
  /** Core's broadcast lifecycle state: Ready again after a release, or Inflight. */
  state: BroadcastState;
  /** When the current (or last) delivery started, for the history. */
  deliveredAt: number;
}

/** A delay message the instance's cursor passed before its time (T1). */
export interface DelayedMessage {
  readonly topic: string;
  readonly offset: number;
  readonly deliverAt: number;
}

/**
 * One instance of a broadcasting group (B1), as the engine holds it in memory: its own cursor in
 * each topic, the messages it holds (delivered and not consumed, or Ready again after a release),
 * the delay messages it passed before their time, and when it was last seen.
 *
 * What is stored is its position in each topic, not its cursor: the lowest offset it still holds,
 * else its cursor. Every message below the position is consumed by the instance (or passed over by
 * its filter), so a restart delivers again only what it had not consumed.
 */
export class BroadcastInstance {
  readonly group: GroupRuntime;
  readonly clientId: string;
  /** Per topic, the next offset to take from the log. */
  readonly cursors = new Map<string, number>();
  /** Held messages by `topic\0offset`. */
  readonly held = new Map<string, BroadcastDelivery>();
  /** Released messages, Ready again for this instance, in the order they were released. */
  readonly readyAgain: BroadcastDelivery[] = [];
  /** Delay messages waiting for their time. */
  readonly delayed: DelayedMessage[] = [];
  /** Subscriptions of this instance on live sessions (a reconnect may briefly overlap the old one). */
  readonly subscriptionIds = new Set<number>();
  lastSeenAt: number;

  constructor(group: GroupRuntime, clientId: string, lastSeenAt: number) {
    this.group = group;
    this.clientId = clientId;
    this.lastSeenAt = lastSeenAt;
  }

  /** The key of the instance among all groups' instances: no group name contains `\0`. */
  get key(): string {
    return instanceKey(this.group.name, this.clientId);
  }

  /** The address of one of its messages, unique across instances (for the lease table). */
  addressOf(topic: string, offset: number): DeliveryAddress {
    return { group: this.key, topic, offset };
  }

  /** Per topic, the offset below which the instance has consumed everything. */
  positions(): Record<string, number> {
    const positions: Record<string, number> = Object.fromEntries(this.cursors);
    const lower = (topic: string, offset: number) => {
      const current = positions[topic];
      if (current === undefined || offset < current) positions[topic] = offset;
    };
    for (const delivery of this.held.values()) lower(delivery.topic, delivery.offset);
    for (const delay of this.delayed) lower(delay.topic, delay.offset);
    return positions;
  }

  /** Messages after its cursors (tag filters aside), plus those it holds and has not been handed. */
  backlog(nextOffsetOf: (topic: string) => number | undefined): number {
    let count = this.readyAgain.length + this.delayed.length;
    for (const [topic, cursor] of this.cursors)
      count += Math.max(0, (nextOffsetOf(topic) ?? cursor) - cursor);
    return count;
  }

  /** Messages it was delivered and has not settled yet. */
  get inflight(): number {
    return this.held.size - this.readyAgain.length;
  }

  /** The record that stores the instance. */
  toRecord(): BroadcastInstanceRecord {
    return {
      group: this.group.name,
      clientId: this.clientId,
      positions: this.positions(),
      lastSeenAt: this.lastSeenAt,
    };
  }
}

/** The key of a group's instance. */
export function instanceKey(group: string, clientId: string): string {
  return `${group}\u0000${clientId}`;
}

/** The key of a held message in {@link BroadcastInstance.held}. */
export function heldKey(topic: string, offset: number): string {
  return `${topic}\u0000${offset}`;
}
