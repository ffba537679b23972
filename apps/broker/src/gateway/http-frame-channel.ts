import type { FrameChannel, FrameChannelListener } from './frame-channel.js';

/**
 * One HTTP request as a {@link FrameChannel}: the request's frames go to the session one at a
 * time, and the frame the session sends back is that frame's answer. This is what makes an HTTP
 * request a short-lived session with the WebSocket session's dispatch, checks and error codes,
 * rather than a second copy of them.
 */
export class HttpFrameChannel implements FrameChannel {
  /** The close code the session ended with, if it ended (a refused token, a shutdown). */
  closeCode: number | undefined;
  #listener: FrameChannelListener | undefined;
  #waiter: ((answer: Uint8Array | undefined) => void) | undefined;

  get open(): boolean {
    return this.closeCode === undefined;
  }

  listen(listener: FrameChannelListener): void {
    this.#listener = listener;
  }

  /** Nothing to pause: the request's frames are handed over one at a time, each after the last's answer. */
  pauseReading(): void {}

  resumeReading(): void {}

  /**
   * A frame the session sends: the answer to the frame in progress. Nothing is sent unasked, as
   * push (`deliver` frames) is refused before a session sees it.
   */
  send(frame: Uint8Array): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.(frame);
  }

  close(code: number): void {
    if (this.closeCode !== undefined) return;
    this.closeCode = code;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.(undefined);
    this.#listener?.onClose();
  }

  /**
   * Hand the session one frame and resolve with the frame it answers; `undefined` when the session
   * ended before answering. Frames go one at a time, so the next frame sent is this frame's answer.
   */
  exchange(frame: Uint8Array): Promise<Uint8Array | undefined> {
    if (this.closeCode !== undefined || this.#listener === undefined) return Promise.resolve(undefined);
    const answer = new Promise<Uint8Array | undefined>((resolve) => {
      this.#waiter = resolve;
    });
    this.#listener.onFrame(frame);
    return answer;
  }
}
