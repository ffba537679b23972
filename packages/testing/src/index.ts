export type {
  DlqEntry,
  GroupView,
  MessageGroupView,
  MessageMeta,
  MessageView,
  TopicView,
} from './admin-views.js';
export type { Delivery, DeliveryQuery, DeliveryResult, InflightDelivery } from './deliveries.js';
export { type Duration, durationMs, formatDuration } from './duration.js';
export { TestAdmin } from './test-admin.js';
export {
  type StartTestBrokerOptions,
  startTestBroker,
  type TestBroker,
  type WaitForDeliveryOptions,
} from './test-broker.js';
export { ExpectationError, SettleTimeoutError } from './testing-errors.js';
export type { RunUntilIdleOptions, VirtualClock } from './virtual-clock.js';
