export {
  type CallOptions,
  type ClientCloseOptions,
  ClientError,
  type ClientErrorCode,
  type ClientOptions,
  type ConnectionStatus,
  ReceivedMessage,
} from '@ricochet/client';
export { BrokerError, RicochetError } from '@ricochet/protocol';
export { SimpleConsumer } from './simple-consumer.js';
export {
  DEFAULT_AWAIT_DURATION_MS,
  DEFAULT_UNAVAILABLE_RETRY_MS,
  type SimpleConsumerCallOptions,
  type SimpleConsumerCloseOptions,
  type SimpleConsumerOptions,
} from './simple-consumer-options.js';
