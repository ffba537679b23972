export {
  abortedError,
  badRequestError,
  CLIENT_ERROR_CODES,
  ClientError,
  type ClientErrorCode,
  type LocalCheckCode,
  toRicochetError,
  untilAborted,
} from './client-error.js';
export { Connection, type OneWayFrame } from './connection.js';
export {
  type CallOptions,
  type ClientCloseOptions,
  type ClientOptions,
  type CloseOptions,
  type ConnectionOptions,
  connectionOptionsOf,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type RequestOptions,
} from './connection-options.js';
export type { ConnectionState, ConnectionStatus } from './connection-status.js';
export { checkConsumerGroup, checkSubscriptions } from './consumer-options.js';
export { drainWithTimeout, IdleWaiters } from './drain-with-timeout.js';
export type { UnsolicitedFrames, UnsolicitedFrameType } from './frame-router.js';
export type { SessionInfo } from './handshake.js';
export { createMessageId } from './message-id.js';
export { checkIntegerField, checkIntegerInRange, type IntegerFieldSchema } from './range-checks.js';
export { ReceivedMessage, receiptHandleOf, replaceReceiptHandle } from './received-message.js';
export { ANSWER_TYPES, type AnswerFrame, type RequestFrameInput } from './request-table.js';
export { TickBatcher, type TickBatcherOptions } from './tick-batcher.js';
export type { TlsOptions } from './tls-options.js';
export type {
  FrameLink,
  LinkCloseEvent,
  LinkConnectOptions,
  LinkListener,
  Transport,
} from './transport.js';
export { type TransportChoice, transportFor } from './transports.js';
export type {
  WebSocketCloseEvent,
  WebSocketConstructor,
  WebSocketErrorEvent,
  WebSocketLike,
  WebSocketMessageEvent,
} from './web-socket.js';
