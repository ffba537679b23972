/**
 * What a {@link Session} needs from its connection, whatever the transport: frames in and out,
 * and a close with a code and reason. The WebSocket gateway and the TCP listener each adapt their
 * socket to it, so one Session class serves every transport with the same auth, limits,
 * bad-input rules and error codes.
 * @see docs/protocol/transports.md
 */
export interface FrameChannel {
  /** Whether frames can still be written. */
  readonly open: boolean;
  /** Write one encoded frame. */
  send(frame: Uint8Array): void;
  /**
   * End the connection with a close code (RFC 6455 §7.4.1, see `close-codes.ts`) and a reason: a
   * WebSocket close frame, or the stream's close record. The listener's `onClose` follows.
   */
  close(code: number, reason: string): void;
  /** Start telling `listener` what arrives; called once, by the session. */
  listen(listener: FrameChannelListener): void;
  /**
   * Stop reading the connection until {@link resumeReading}: the session has frames waiting for a
   * later turn (`frame-inbox.ts`). Frames already read may still arrive meanwhile.
   */
  pauseReading(): void;
  resumeReading(): void;
}

/** Who a {@link FrameChannel} tells about what arrives. */
export interface FrameChannelListener {
  /** One frame's bytes. */
  onFrame(frame: Uint8Array): void;
  /** Something that cannot be a frame (a WebSocket text message), described for the error frame. */
  onUnreadable(description: string): void;
  /** The connection ended, from either side; called once. */
  onClose(): void;
}
