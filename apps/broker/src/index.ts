export { type Broker, type BrokerAddress, type BuildBrokerOptions, buildBroker } from './app.js';
export {
  type BrokerConfig,
  type BrokerConfigInput,
  brokerConfigSchema,
  FLUSH_POLICIES,
  type FlushPolicy,
  parseCommandLine,
  resolveBrokerConfig,
} from './config.js';
export type { GroupStats, MessageGroupView } from './engine/broker-engine.js';
export { systemTimers, type TimerHandle, type TimerService } from './engine/timer-service.js';
