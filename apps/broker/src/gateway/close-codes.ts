/**
 * WebSocket close codes the broker uses (RFC 6455 §7.4.1). Every close but the shutdown's
 * `goingAway` follows an `error` frame that says why.
 * @see docs/protocol/README.md
 */
export const CLOSE_CODES = {
  /** The broker is shutting down. */
  goingAway: 1001,
  /** The first frame was not a valid `hello` (or named another protocol version). */
  protocolError: 1002,
  /** The token was refused. */
  policyViolation: 1008,
  /** The broker is not ready for sessions (starting or draining). */
  tryAgainLater: 1013,
} as const;
