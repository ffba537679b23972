import type { Clock } from '@ricochet/core';
import { BrokerError, dlqTopicOf } from '@ricochet/protocol';
import type { StoredMessage } from '../../store/records.js';
import type { EngineEventSink } from '../engine-events.js';
import type { EffectApplier } from '../lifecycle/effect-applier.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import type { TopicRegistry } from '../model/topic-registry.js';
import type { TimerService } from '../timers/timer-service.js';
import { RedrivePacer } from './redrive-pacer.js';

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
  /** X7: a redrive's progress, after each slice. */
  readonly onEvent?: EngineEventSink | undefined;
  /** Stamps the progress events. */
  readonly clock: Clock;
}

/** D2: list a group's DLQ and redrive messages back to their origin topic, for that group only. */
export class DeadLetterAdmin {
  readonly #deps: DeadLetterAdminDeps;
  readonly #pacer: RedrivePacer;

  constructor(deps: DeadLetterAdminDeps) {
    this.#deps = deps;
    this.#pacer = new RedrivePacer(deps.timers);
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
    const queue = this.redrivable(groupName, options.messageIds);
    let redriven = 0;
    this.#pacer.pace(queue, options.ratePerSecond ?? DEFAULT_REDRIVE_RATE_PER_SECOND, (slice) => {
      this.#redriveTo(group, slice);
      redriven += slice.length;
      this.#deps.onEvent?.({
        type: 'redrive_progress',
        group: group.name,
        atMs: this.#deps.clock.now(),
        redriven,
        total: queue.length,
      });
    });
    return { accepted: queue.length };
  }

  /**
   * The group's DLQ messages a redrive would take, in DLQ order: not redriven yet, whose origin
   * message retention has not deleted, and among `messageIds` when given.
   * @throws BrokerError NOT_FOUND for an unknown group.
   */
  redrivable(groupName: string, messageIds?: readonly string[]): StoredMessage[] {
    this.#group(groupName);
    const wanted = messageIds === undefined ? undefined : new Set(messageIds);
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
    return queue;
  }

  /** Make these DLQ messages of {@link redrivable} Ready for the group again, now. */
  redriveNow(groupName: string, messages: readonly StoredMessage[]): void {
    this.#redriveTo(this.#group(groupName), messages);
  }

  #redriveTo(group: GroupRuntime, messages: readonly StoredMessage[]): void {
    for (const message of messages) this.#deps.applier.redrive(group, message);
  }

  /** Stop redrives in progress (the broker is closing); what is left stays in the DLQ. */
  close(): void {
    this.#pacer.close();
  }

  #group(name: string): GroupRuntime {
    const group = this.#deps.groups.get(name);
    if (!group) throw BrokerError.of('NOT_FOUND', `group "${name}" does not exist`, { group: name });
    return group;
  }
}
