export { ClientError, type ClientErrorCode, type ConnectionStatus, ReceivedMessage } from '@ricochet/client';
export { BrokerError, RicochetError } from '@ricochet/protocol';
export {
  DEFAULT_AWAIT_DURATION_MS,
  SimpleConsumer,
  type SimpleConsumerCallOptions,
  type SimpleConsumerCloseOptions,
  type SimpleConsumerOptions,
} from './simple-consumer.js';
