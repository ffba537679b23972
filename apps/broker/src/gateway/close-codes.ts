/**
 * Close codes the broker uses (RFC 6455 §7.4.1), on every stream transport: a WebSocket close
 * frame carries them, and so does the TCP stream's close record. A close during the handshake
 * follows an `error` frame that says why; the shutdown's `goingAway`, ws's `1009` for an oversized
 * frame and the message deadline's `policyViolation` carry their reason in the close only (over
 * TCP an oversized frame gets a `413` error frame first: no library answers it there).
 * @see docs/protocol/README.md, docs/protocol/transports.md
 */
export const CLOSE_CODES = {
  /** The peer asked to close, or the session ended normally. */
  normalClosure: 1000,
  /** The broker is shutting down. */
  goingAway: 1001,
  /** The first frame was not a valid `hello` (or named another protocol version). */
  protocolError: 1002,
  /** The token was refused, or a WebSocket message did not finish within its deadline. */
  policyViolation: 1008,
  /** A frame over `maxFrameBytes`. */
  messageTooBig: 1009,
  /** The broker is not ready for sessions (starting or draining), or has `maxConnections` open. */
  tryAgainLater: 1013,
} as const;
