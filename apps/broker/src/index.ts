export { type Broker, type BrokerAddress, type BuildBrokerOptions, buildBroker } from './app.js';
export type { ReloadOutcome } from './auth/access-control.js';
export { BrokerStartError } from './auth/startup-auth.js';
export { parseCommandLine } from './command-line.js';
export {
  type BrokerConfig,
  type BrokerConfigInput,
  brokerConfigSchema,
  FLUSH_POLICIES,
  type FlushPolicy,
  resolveBrokerConfig,
} from './config.js';
export type {
  GroupStats,
  GroupView,
  MessageGroupView,
  MessageView,
  NamePage,
  TopicStats,
  TopicView,
} from './engine/index.js';
export { systemTimers, type TimerHandle, type TimerService } from './engine/index.js';
export { type StandbyRelay, type StandbyRelayOptions, startStandbyRelay } from './gateway/standby-relay.js';
export {
  type StandbyTcpRelay,
  type StandbyTcpRelayOptions,
  startStandbyTcpRelay,
} from './gateway/standby-tcp-relay.js';
export { type QueueRoute, queuesSpread } from './partitions/queue-ownership.js';
export type { BrokerStore } from './store/broker-store.js';
export type { LiveBroker } from './store/postgres/broker-registry.js';
export type { ClusterBroker, ClusterQueue, ClusterView } from './store/postgres/cluster-view.js';
export type { StoredMessage } from './store/records.js';
