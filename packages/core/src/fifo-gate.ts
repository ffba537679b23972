/**
 * P5 for FIFO groups: per (topic, message group), the one message that may be delivered now —
 * the oldest one not yet committed or dead-lettered. While it is Inflight, WaitingRetry or Ready
 * again, later messages of its message group wait; other message groups keep flowing.
 *
 * A pure rule with memory: it decides who may go, and does no I/O. The broker keeps one per group,
 * claims a head when a message is handed out and releases it when the lifecycle's
 * `releaseFifoKey` effect says the message is done.
 */
export class FifoGate {
  readonly #heads = new Map<string, number>();

  /** Whether the message must wait for an older one of its message group. */
  isBlocked(topic: string, messageGroup: string, offset: number): boolean {
    const head = this.#heads.get(keyOf(topic, messageGroup));
    return head !== undefined && head !== offset;
  }

  /** Make the message its message group's head, unless it already has one. */
  claim(topic: string, messageGroup: string, offset: number): void {
    const key = keyOf(topic, messageGroup);
    if (!this.#heads.has(key)) this.#heads.set(key, offset);
  }

  /** The head reached Commit or DLQ: its message group moves on. */
  release(topic: string, messageGroup: string, offset: number): void {
    const key = keyOf(topic, messageGroup);
    if (this.#heads.get(key) === offset) this.#heads.delete(key);
  }

  get size(): number {
    return this.#heads.size;
  }

  /** Every message group that has a head now, and that head's offset (for the admin view). */
  *heads(): Generator<{ topic: string; messageGroup: string; offset: number }> {
    for (const [key, offset] of this.#heads) {
      const split = key.indexOf('\u0000');
      yield { topic: key.slice(0, split), messageGroup: key.slice(split + 1), offset };
    }
  }
}

function keyOf(topic: string, messageGroup: string): string {
  return `${topic}\u0000${messageGroup}`;
}
