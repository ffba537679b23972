/**
 * The cluster's one entrance: everything that exists only because there is more than one broker
 * (routing to queue owners, peers, membership, standby), as the app and the package entrance use it.
 */

export { openBackend } from './backend.js';
export type { LiveBroker } from './membership/broker-registry.js';
export type { ClusterBroker, ClusterQueue, ClusterView } from './membership/cluster-view.js';
export { assignQueues, rankQueues } from './membership/queue-assignment.js';
export type { QueueRoute } from './membership/queue-ownership.js';
export { queuesSpread } from './membership/queue-ownership.js';
export { standbyFor } from './standby/standby.js';
export type { StandbyRelay, StandbyRelayOptions } from './standby/standby-relay.js';
export { startStandbyRelay } from './standby/standby-relay.js';
export type { StandbyTcpRelay, StandbyTcpRelayOptions } from './standby/standby-tcp-relay.js';
export { startStandbyTcpRelay } from './standby/standby-tcp-relay.js';
