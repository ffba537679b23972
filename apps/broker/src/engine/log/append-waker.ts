import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';

/**
 * Wakes the groups that read a topic once messages were appended to it (a send, a DLQ copy). New
 * messages are served from memory at once (see RecentMessages), so the wake-up need not wait for
 * the commit; the topics appended to in one turn wake their readers together, once.
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
      for (const group of this.#groups.list()) {
        if (topics.some((name) => this.#reads(group, name))) group.wake();
      }
    });
  }
}
