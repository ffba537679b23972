import type { LinkCloseEvent, LinkListener } from './transport.js';

type HeldEvent =
  | { readonly type: 'frame'; readonly frame: Uint8Array }
  | { readonly type: 'unreadable'; readonly description: string }
  | { readonly type: 'close'; readonly event: LinkCloseEvent };

/**
 * The listener side of a {@link FrameLink}, shared by every transport: events that arrive before
 * the first listener are held and handed over when it comes; the close is told once; after the
 * link is discarded (`mute`) nothing is told at all.
 */
export class LinkEvents {
  #listener: LinkListener | undefined;
  #held: HeldEvent[] = [];
  #closed = false;
  #muted = false;

  /** Whether the link ended (told or held). */
  get closed(): boolean {
    return this.#closed;
  }

  listen(listener: LinkListener): void {
    this.#listener = listener;
    const held = this.#held;
    this.#held = [];
    for (const event of held) {
      // A listener may replace itself while taking a held event (the handshake's welcome does).
      this.#tell(event);
    }
  }

  frame(frame: Uint8Array): void {
    this.#tell({ type: 'frame', frame });
  }

  unreadable(description: string): void {
    this.#tell({ type: 'unreadable', description });
  }

  close(event: LinkCloseEvent): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#tell({ type: 'close', event });
  }

  /** Tell nobody anything from now on: the owner closed the link itself. */
  mute(): void {
    this.#muted = true;
    this.#closed = true;
    this.#held = [];
  }

  #tell(event: HeldEvent): void {
    if (this.#muted) return;
    const listener = this.#listener;
    if (listener === undefined || this.#held.length > 0) {
      this.#held.push(event);
      return;
    }
    switch (event.type) {
      case 'frame':
        listener.onFrame(event.frame);
        return;
      case 'unreadable':
        listener.onUnreadable(event.description);
        return;
      case 'close':
        listener.onClose(event.event);
        return;
    }
  }
}
