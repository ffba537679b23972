export { type Broker, type BuildBrokerOptions, buildBroker } from './app.js';
export type { ReloadOutcome } from './auth/access-control.js';
export { BrokerStartError } from './auth/startup-auth.js';
export type { BrokerAddress } from './broker-address.js';
export type { ClusterBroker, ClusterQueue, ClusterView, LiveBroker } from './cluster/index.js';
export {
  assignQueues,
  type QueueRoute,
  queuesSpread,
  rankQueues,
  type StandbyRelay,
  type StandbyRelayOptions,
  type StandbyTcpRelay,
  type StandbyTcpRelayOptions,
  startStandbyRelay,
  startStandbyTcpRelay,
} from './cluster/index.js';
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
export type { BrokerStore } from './store/broker-store.js';
export { brokerIdentity } from './store/open-store.js';
export type { StoredMessage } from './store/records.js';
/** For tools that read a store's messages themselves (the kill -9 soak): a data directory's or a database's. */
export { decodeStoredMessage, isStoredMessageRecord } from './store/schema/stored-message.js';
