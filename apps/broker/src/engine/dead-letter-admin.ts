import { BrokerError, dlqTopicOf } from '@ricochet/protocol';
import type { StoredMessage } from '../store/records.js';
import type { EffectApplier } from './effect-applier.js';
import type { GroupRegistry, GroupRuntime } from './group-registry.js';
import type { TimerHandle, TimerService } from './timer-service.js';
import type { TopicRegistry } from './topic-registry.js';

/** The default cap on redrive speed (D2). */
export const DEFAULT_REDRIVE_RATE_PER_SECOND = 500;

/** One page of a group's DLQ. */
export interface DeadLetterPage {
  readonly messages: readonly StoredMessage[];
  /** Where the next page starts, or `null` at the end. */
  readonly cursor: number | null;
}

export interface DeadLetterAdminDeps {
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  /** Makes a redriven message Ready again for its group. */
  readonly applier: EffectApplier;
  readonly timers: TimerService;
}

/** D2: list a group's DLQ and redrive messages back to their origin topic, for that group only. */
export class DeadLetterAdmin {
  readonly #deps: DeadLetterAdminDeps;
  readonly #running = new Set<TimerHandle>();

  constructor(deps: DeadLetterAdminDeps) {
    this.#deps = deps;
  }

  /**
   * A page of the group's dead-lettered messages not yet redriven, from DLQ offset `fromOffset`.
   * @throws BrokerError NOT_FOUND for an unknown group.
   */
  list(groupName: string, fromOffset: number, limit: number): DeadLetterPage {
    this.#group(groupName);
    const messages: StoredMessage[] = [];
    let cursor = fromOffset;
    for (let guard = 0; guard < 10_000 && messages.length < limit; guard++) {
      const batch = this.#deps.topics.readLog(dlqTopicOf(groupName), cursor, Math.max(limit, 64));
      if (batch.length === 0) return { messages, cursor: null };
      for (const message of batch) {
        cursor = message.offset + 1;
        if (message.deadLetter?.redrivenAt === undefined) messages.push(message);
        if (messages.length >= limit) break;
      }
    }
    const more = this.#deps.topics.readLog(dlqTopicOf(groupName), cursor, 1).length > 0;
    return { messages, cursor: more ? cursor : null };
  }

  /**
   * Redrive every DLQ message of the group, or those with the given ids, at most
   * `ratePerSecond` per second. Returns how many will be redriven; the work continues in the
   * background and each message is Ready for the group when its turn comes.
   * @throws BrokerError NOT_FOUND for an unknown group.
   */
  redrive(
    groupName: string,
    options: { messageIds?: readonly string[]; ratePerSecond?: number },
  ): { accepted: number } {
    const group = this.#group(groupName);
    const wanted = options.messageIds === undefined ? undefined : new Set(options.messageIds);
    const queue: StoredMessage[] = [];
    for (let cursor = 0, guard = 0; guard < 1_000_000; guard++) {
      const batch = this.#deps.topics.readLog(dlqTopicOf(groupName), cursor, 512);
      if (batch.length === 0) break;
      for (const message of batch) {
        cursor = message.offset + 1;
        if (message.deadLetter?.redrivenAt !== undefined) continue;
        if (wanted && !wanted.has(message.messageId)) continue;
        // Retention deleted the message it names: there is nothing left to deliver again.
        const origin = message.deadLetter;
        if (origin && this.#deps.topics.isExpired(origin.originTopic, origin.originOffset)) continue;
        queue.push(message);
      }
    }
    this.#pace(group, queue, options.ratePerSecond ?? DEFAULT_REDRIVE_RATE_PER_SECOND);
    return { accepted: queue.length };
  }

  /** Stop redrives in progress (the broker is closing); what is left stays in the DLQ. */
  close(): void {
    for (const timer of this.#running) timer.cancel();
    this.#running.clear();
  }

  /**
   * Redrive in slices: every `intervalMs`, as many as the rate allows, so a large DLQ never floods
   * the group (or the event loop) at once.
   */
  #pace(group: GroupRuntime, queue: StoredMessage[], ratePerSecond: number): void {
    const intervalMs = Math.max(10, Math.ceil(1_000 / ratePerSecond));
    const perSlice = Math.max(1, Math.floor((ratePerSecond * intervalMs) / 1_000));
    let next = 0;
    const slice = () => {
      for (const message of queue.slice(next, next + perSlice)) this.#deps.applier.redrive(group, message);
      next += perSlice;
      if (next >= queue.length) return;
      const timer = this.#deps.timers.setTimer(intervalMs, () => {
        this.#running.delete(timer);
        slice();
      });
      this.#running.add(timer);
    };
    if (queue.length > 0) slice();
  }

  #group(name: string): GroupRuntime {
    const group = this.#deps.groups.get(name);
    if (!group) throw BrokerError.of('NOT_FOUND', `group "${name}" does not exist`, { group: name });
    return group;
  }
}
