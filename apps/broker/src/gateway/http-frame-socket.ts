import { CLOSE_CODES } from './close-codes.js';

type MessageListener = (data: Uint8Array, isBinary: boolean) => void;
type CloseListener = () => void;

/**
 * The slice of a WebSocket a {@link Session} talks to, for one HTTP request: the request's frames
 * go in as binary messages, and each frame the session sends is queued for the answer. This is
 * what lets an HTTP request be a short-lived session with the WebSocket session's dispatch, its
 * checks and its error codes, rather than a second copy of them.
 */
export class HttpFrameSocket {
  readonly OPEN = 1;
  readyState = 1;
  /** The close code the session ended with, if it ended itself (a refused token, a shutdown). */
  closeCode: number | undefined;
  readonly #messageListeners: MessageListener[] = [];
  readonly #closeListeners: CloseListener[] = [];
  #waiter: ((answer: Uint8Array | undefined) => void) | undefined;

  on(event: string, listener: MessageListener | CloseListener): this {
    if (event === 'message') this.#messageListeners.push(listener as MessageListener);
    else if (event === 'close') this.#closeListeners.push(listener as CloseListener);
    return this;
  }

  /**
   * A frame the session sends: the answer to the frame in progress. Nothing is sent unasked, as
   * push (`deliver` frames) is refused before a session sees it.
   */
  send(frame: Uint8Array): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.(frame);
  }

  close(code: number = CLOSE_CODES.goingAway): void {
    if (this.readyState !== this.OPEN) return;
    this.readyState = 3;
    this.closeCode = code;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.(undefined);
    for (const listener of this.#closeListeners) listener();
  }

  /**
   * Hand the session one frame and resolve with the frame it answers; `undefined` when the session
   * ended before answering. Frames go one at a time, so the next frame sent is this frame's answer.
   */
  exchange(frame: Uint8Array): Promise<Uint8Array | undefined> {
    if (this.readyState !== this.OPEN) return Promise.resolve(undefined);
    const answer = new Promise<Uint8Array | undefined>((resolve) => {
      this.#waiter = resolve;
    });
    for (const listener of this.#messageListeners) listener(frame, true);
    return answer;
  }
}
