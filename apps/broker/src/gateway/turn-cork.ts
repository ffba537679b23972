import type { Writable } from 'node:stream';

/**
 * Frames written to one socket in one turn of the event loop, sent in one system call. A busy
 * broker writes many frames per turn to the same connection (a session between brokers carries
 * every client's requests to one owner; a client gets answers and deliveries together), and
 * every `write` of an uncorked socket is a syscall of its own: under load on a small machine they
 * cost more than the frames' encoding. Holding the socket corked from the first frame of a turn
 * until the turn's callbacks and promise continuations are done (`process.nextTick`, which runs
 * after them) turns them into one `writev`, and delays no frame past the turn it was sent in.
 */
export class TurnCork {
  readonly #socket: Writable;
  #held = false;

  constructor(socket: Writable) {
    this.#socket = socket;
  }

  /** Call before each write: the first of a turn corks the socket until the turn ends. */
  hold(): void {
    if (this.#held) return;
    this.#held = true;
    this.#socket.cork();
    process.nextTick(() => {
      this.#held = false;
      this.#socket.uncork();
    });
  }
}
