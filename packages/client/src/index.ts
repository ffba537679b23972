// Two audiences (README.md). Users of the clients: ClientOptions, CallOptions, ClientCloseOptions,
// ClientError, ClientErrorCode, CLIENT_ERROR_CODES, ConnectionStatus, ReceivedMessage, TlsOptions
// and WebSocketConstructor; the producer and the consumers re-export what their users need.
// Everything else is for the sibling client packages (@ricochet/producer, push-consumer,
// simple-consumer) only: the connection they share, and the checks and helpers each needs.
export {
  abortedError,
  badRequestError,
  CLIENT_ERROR_CODES,
  ClientError,
  type ClientErrorCode,
  toRicochetError,
  untilAborted,
} from './client-error.js';
export { Connection, type OneWayFrame } from './connection.js';
export type {
  CallOptions,
  ClientCloseOptions,
  ClientOptions,
  ConnectionOptions,
} from './connection-options.js';
export {
  connectionOptionsOf,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from './connection-options.js';
export type { ConnectionStatus } from './connection-status.js';
export { checkConsumerGroup, checkSubscriptions } from './consumer-options.js';
export { drainWithTimeout, IdleWaiters } from './drain-with-timeout.js';
export { createMessageId } from './message-id.js';
export { OwnerRoutes, type OwnerRoutesOptions, otherOwnerEndpoints } from './owner-routes.js';
export { checkIntegerField, checkIntegerInRange } from './range-checks.js';
export { ReceivedMessage, receiptHandleOf, replaceReceiptHandle } from './received-message.js';
export type { AnswerFrame, RequestFrameInput } from './request-table.js';
export { TickBatcher } from './tick-batcher.js';
export type { TlsOptions } from './tls-options.js';
export {
  type DeliveryOutcome,
  isTracingAvailable,
  isTracingLoaded,
  loadTracing,
  type ProcessSpan,
  type SendSpan,
  startProcessSpan,
  startSendSpan,
  TRACE_ATTRIBUTES,
} from './tracing.js';
export type { WebSocketConstructor } from './web-socket.js';
