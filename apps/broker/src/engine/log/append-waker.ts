import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';

/**
 * Wakes the groups that read a topic once messages were appended to it (a send, a DLQ copy). New
 * messages are served from memory at once (see RecentMessages), so the wake-up need not wait for
 * the commit; the topics appended to in one turn wake their readers together, once. The readers
 * come from the registry's index by topic: the cost of a turn follows the groups that read what
 * was written, not every group of the broker.
 */
export class AppendWaker {
  readonly #groups: GroupRegistry;
  readonly #reads: (group: GroupRuntime, topic: string) => boolean;
  readonly #appendedTopics = new Set<string>();

  /** `reads` tells whether a group consumes a topic (its clustering cursors or broadcast instances). */
  constructor(groups: GroupRegistry, reads: (group: GroupRuntime, topic: string) => boolean) {
    this.#groups = groups;
    this.#reads = reads;
  }

  appended(topic: string): void {
    const first = this.#appendedTopics.size === 0;
    this.#appendedTopics.add(topic);
    if (!first) return;
    queueMicrotask(() => {
      const topics = [...this.#appendedTopics];
      this.#appendedTopics.clear();
      // Each reader once, however many of its topics were appended to in this turn.
      const woken = topics.length > 1 ? new Set<GroupRuntime>() : undefined;
      for (const topic of topics) {
        for (const group of this.#groups.readersOf(topic)) {
          if (woken?.has(group) || !this.#reads(group, topic)) continue;
          woken?.add(group);
          group.wake();
        }
      }
    });
  }
}
