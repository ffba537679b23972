export {
  type CallOptions,
  type ClientCloseOptions,
  ClientError,
  type ClientErrorCode,
  type ClientOptions,
  type ConnectionStatus,
} from '@ricochet/client';
export { BrokerError, RicochetError } from '@ricochet/protocol';
export type { ProducerMessage } from './outgoing-message.js';
export {
  DEFAULT_MAX_ATTEMPTS,
  Producer,
  type ProducerCloseOptions,
  type ProducerOptions,
  type SendOptions,
  type SendResult,
} from './producer.js';
export { DEFAULT_SEND_TIMEOUT_MS } from './send-retry.js';
