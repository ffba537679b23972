/**
 * The wire protocol's version. It moves independently of the packages' versions: it changes only
 * when a frame changes in a way an older peer cannot ignore.
 * @see docs/protocol/README.md#versioning
 */
export const PROTOCOL_VERSION = 1;

/** The WebSocket subprotocol a client offers and the broker requires on upgrade. */
export const WEBSOCKET_SUBPROTOCOL = `ricochet.v${PROTOCOL_VERSION}`;

/** The path of the broker's WebSocket endpoint, relative to its base URL. */
export const WEBSOCKET_PATH = '/v1/ws';
