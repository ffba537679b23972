/**
 * A frame goes at once when its connection has fewer than this many messages on the wire, or when
 * it is full (this many messages, or its byte budget). Otherwise its sends wait, and the sends
 * made meanwhile join them, until one of the two holds (an answer brings the count on the wire
 * down, or they fill a frame) or {@link MAX_LANE_WAIT_MS} passes. At a low rate nothing waits (a
 * send at a time is never this many on the wire); under load a send waits for answers already on
 * their way, as it would wait at the broker behind the commit in flight.
 */
export const EAGER_FRAME_MESSAGES = 64;

/**
 * The longest a send waits in its lane, in ms: then what waits goes, however busy the connection.
 * Answers under load come back within a few ms, so this rarely fires; it bounds what a send pays
 * when the frames on the wire wait long at the broker for reasons of their own (a queue between
 * owners holds its sends up to 3 s), which would otherwise hold every later send to that broker.
 */
export const MAX_LANE_WAIT_MS = 20;

/** What a lane needs of a send: how many bytes it adds to a frame. */
export interface LaneItem {
  readonly encodedBytesEstimate: number;
}

/** How a {@link SendLane} cuts and sends the frames of its connection. */
export interface SendLaneParts<TItem extends LaneItem> {
  /**
   * Remove the next frame's sends from the head of `waiting` (at least one) and return those still
   * to be sent (a send aborted while it waited is dropped here): none when all were.
   */
  readonly takeFrame: (waiting: TItem[]) => TItem[];
  /** The most bytes of sends one frame of the connection carries. */
  readonly maxFrameBytes: () => number;
  /** Put `frame` on the wire; call `answered` once when it is answered or failed. */
  readonly sendFrame: (frame: readonly TItem[], answered: () => void) => void;
}

/**
 * The sends bound for one connection, on their way into frames: at once while the connection is
 * not busy, gathered into fuller frames while it is (see {@link EAGER_FRAME_MESSAGES}).
 *
 * Why: a producer that talks to the queues' owners splits each tick's sends over them, and each
 * owner answers its share on its own, so the sends those answers set off split again. Left alone
 * the frames shrink to a few messages each (measured: about 21 per frame with three brokers, 200
 * with one, at 500 sends in flight), and each frame costs its broker a turn, a commit and a feed
 * batch of its own: the cluster spent 2.2 times one broker's CPU per message sent. Like Nagle's
 * algorithm and Kafka's `linger.ms`, but a send waits only while its connection has answers on
 * their way, and {@link MAX_LANE_WAIT_MS} at most.
 */
export class SendLane<TItem extends LaneItem> {
  readonly #parts: SendLaneParts<TItem>;
  readonly #waiting: TItem[] = [];
  /** Messages of this connection sent and not yet answered. */
  #onTheWire = 0;
  /** Sends what waits once the oldest waiting send has waited {@link MAX_LANE_WAIT_MS}. */
  #waitTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(parts: SendLaneParts<TItem>) {
    this.#parts = parts;
  }

  /** Sends waiting for a frame. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Messages sent on this connection and not yet answered. */
  get onTheWire(): number {
    return this.#onTheWire;
  }

  /** Queue `items`, in order, and send what may go now. */
  add(items: readonly TItem[]): void {
    for (const item of items) this.#waiting.push(item);
    this.#pump();
  }

  #pump(force = false): void {
    // Bounded: each frame taken removes at least one send from the waiting ones.
    while (this.#waiting.length > 0 && (force || this.#mayGo())) {
      const frame = this.#parts.takeFrame(this.#waiting);
      if (frame.length === 0) continue;
      this.#onTheWire += frame.length;
      let answered = false;
      this.#parts.sendFrame(frame, () => {
        if (answered) return;
        answered = true;
        this.#onTheWire -= frame.length;
        this.#pump();
      });
    }
    if (this.#waiting.length === 0) {
      clearTimeout(this.#waitTimer);
      this.#waitTimer = undefined;
    } else if (this.#waitTimer === undefined) {
      this.#waitTimer = setTimeout(() => {
        this.#waitTimer = undefined;
        this.#pump(true);
      }, MAX_LANE_WAIT_MS);
      // Sends waiting are on their way: the timer alone keeps no process alive.
      this.#waitTimer.unref?.();
    }
  }

  /** Whether the next frame goes now: the connection is not busy, or the waiting sends fill a frame. */
  #mayGo(): boolean {
    const waiting = this.#waiting;
    if (this.#onTheWire < EAGER_FRAME_MESSAGES || waiting.length >= EAGER_FRAME_MESSAGES) return true;
    // Fewer than EAGER_FRAME_MESSAGES: a frame full of large messages goes too.
    const maxBytes = this.#parts.maxFrameBytes();
    let bytes = 0;
    for (const item of waiting) {
      bytes += item.encodedBytesEstimate;
      if (bytes >= maxBytes) return true;
    }
    return false;
  }
}
