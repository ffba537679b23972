/**
 * WebSocket close codes the broker uses (RFC 6455 §7.4.1). A close during the handshake follows an
 * `error` frame that says why; the shutdown's `goingAway`, ws's `1009` for an oversized frame and the
 * message deadline's `policyViolation` carry their reason in the close frame only.
 * @see docs/protocol/README.md
 */
export const CLOSE_CODES = {
  /** The broker is shutting down. */
  goingAway: 1001,
  /** The first frame was not a valid `hello` (or named another protocol version). */
  protocolError: 1002,
  /** The token was refused, or a WebSocket message did not finish within its deadline. */
  policyViolation: 1008,
  /** The broker is not ready for sessions (starting or draining). */
  tryAgainLater: 1013,
} as const;
