import type { FastifyBaseLogger } from 'fastify';
import type { ConnectionLimits } from './connection-limits.js';

/** ws's code for a frame whose announced length is over `maxPayload`. */
const OVERSIZED_FRAME_CODE = 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH';

/**
 * Log an error ws reported on an established WebSocket. ws has already closed the connection
 * with the right code when it reports a client's protocol violation (a `WS_ERR_*` code: 1009 for an
 * oversized frame, 1002 for a bad opcode, an unmasked frame, invalid UTF-8 …), and reports it once
 * per connection: one `warn` line with the reason and no stack trace, since the broker is fine.
 * A socket error (a reset connection) is routine and logged at `debug`; anything else came from the
 * broker's own handler and is logged as the failure it is.
 * @returns what the caller does with the socket: leave ws's close handshake to finish, or terminate.
 */
export function logWebSocketError(
  error: Error,
  log: FastifyBaseLogger,
  limits: ConnectionLimits,
): 'closing' | 'terminate' {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code.startsWith('WS_ERR_')) {
    if (code === OVERSIZED_FRAME_CODE) limits.rejected('maxFrameBytes');
    log.warn({ code, reason: error.message }, 'client broke the WebSocket protocol; connection closed');
    // ws has sent the close frame; cutting the socket now could lose it before the client reads it.
    return 'closing';
  }
  if ((error as { syscall?: unknown }).syscall !== undefined) {
    log.debug({ code, reason: error.message }, 'websocket connection error');
  } else log.error({ err: error }, 'websocket handler failed');
  return 'terminate';
}
