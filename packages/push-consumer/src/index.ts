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
export {
  ConsumeResult,
  type ConsumeResultValue,
  MAX_FAILURE_REASON_LENGTH,
  MAX_RETRY_AFTER_MS,
} from './consume-result.js';
export type { ClockTimer, ConsumptionClock } from './consumption-clock.js';
export type { ListenerContext, MessageListener } from './listener-pool.js';
export { NonRetryableError } from './non-retryable-error.js';
export { PushConsumer } from './push-consumer.js';
export {
  DEFAULT_CLOSE_TIMEOUT_MS,
  DEFAULT_CONCURRENCY,
  DEFAULT_CONSUMPTION_TIMEOUT_MS,
  DEFAULT_MAX_CACHED_BYTES,
  DEFAULT_MAX_CACHED_MESSAGES,
  type PushConsumerOptions,
  RESULT_FLUSH_TIMEOUT_MS,
} from './push-consumer-options.js';
