import { type ProcessSpan, type ReceivedMessage, startProcessSpan } from '@ricochet/client';

/** An attempt whose span is open: its lease's deadline, which ends it unless it is settled first. */
interface OpenAttempt {
  readonly span: ProcessSpan;
  timer: ReturnType<typeof setTimeout>;
  /** Set by a `changeInvisibleDuration`: the attempt then ends as a retry after that delay. */
  changed: boolean;
}

/**
 * The `process` spans of a simple consumer's leased messages, one per delivery attempt, from
 * `receive` until the attempt ends: `ack` (success), `deadLetter` (dead_lettered), or the lease's
 * deadline (failure; retry_after when `changeInvisibleDuration` moved it, S4: the message is
 * Ready again then, S2). Nothing is kept for an untraced message. Each open span holds a timer
 * at its lease's deadline (unref'd: it never keeps a process alive), taken from this client's
 * clock, so the span ends about when the broker makes the message Ready again.
 */
export class AttemptSpans {
  readonly #group: string;
  readonly #open = new Map<ReceivedMessage, OpenAttempt>();

  constructor(group: string) {
    this.#group = group;
  }

  /** Start a span for each of `messages`, just leased for `invisibleDurationMs`. */
  received(messages: readonly ReceivedMessage[], invisibleDurationMs: number): void {
    for (const message of messages) {
      const span = startProcessSpan(message, this.#group);
      if (span === undefined) continue;
      const attempt: OpenAttempt = {
        span,
        timer: this.#expireAfter(message, invisibleDurationMs),
        changed: false,
      };
      this.#open.set(message, attempt);
    }
  }

  /** `changeInvisibleDuration(message, invisibleDurationMs)` succeeded: the lease ends later (or now). */
  changed(message: ReceivedMessage, invisibleDurationMs: number): void {
    const attempt = this.#open.get(message);
    if (attempt === undefined) return;
    attempt.changed = true;
    attempt.span.event('ricochet.invisible_duration_changed', {
      'messaging.ricochet.invisible_duration_ms': invisibleDurationMs,
    });
    clearTimeout(attempt.timer);
    attempt.timer = this.#expireAfter(message, invisibleDurationMs);
  }

  /** The message was acked. */
  acked(message: ReceivedMessage): void {
    this.#end(message)?.end('success');
  }

  /** The message was moved to the DLQ by the consumer (D3). */
  deadLettered(message: ReceivedMessage, reason: string | undefined): void {
    this.#end(message)?.end('dead_lettered', 'dead_lettered', reason);
  }

  /** The consumer closed: the leases run out on the broker, and every open attempt failed. */
  closed(): void {
    for (const message of [...this.#open.keys()]) this.#end(message)?.end('failure', 'consumer_closed');
  }

  #expireAfter(message: ReceivedMessage, delayMs: number): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      const attempt = this.#open.get(message);
      this.#open.delete(message);
      if (attempt === undefined) return;
      if (attempt.changed) attempt.span.end('retry_after', 'retry_after', 'changeInvisibleDuration');
      else attempt.span.end('failure', 'lease_expired', 'the lease expired before an ack');
    }, delayMs);
    // Node's timers keep the process alive; browsers' are plain numbers.
    (timer as { unref?: () => void }).unref?.();
    return timer;
  }

  /** Stop tracking `message`'s attempt and hand back its span, if it has one open. */
  #end(message: ReceivedMessage): ProcessSpan | undefined {
    const attempt = this.#open.get(message);
    if (attempt === undefined) return undefined;
    clearTimeout(attempt.timer);
    this.#open.delete(message);
    return attempt.span;
  }
}
