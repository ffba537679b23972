export type {
  DeadLetterEntry as DlqEntry,
  GroupView,
  MessageGroupView,
  MessageView,
  StoredMessageView as MessageMeta,
  TopicSaved,
  TopicView,
} from '@ricochet/protocol';
export type { Delivery, DeliveryQuery, DeliveryResult, InflightDelivery } from './deliveries.js';
export { type Duration, durationMs, formatDuration } from './duration.js';
export { TestAdmin, type TestAdminOptions } from './test-admin.js';
export {
  type StartTestBrokerOptions,
  startTestBroker,
  type TestBroker,
  type WaitForDeliveryOptions,
} from './test-broker.js';
export { ExpectationError, SettleTimeoutError } from './testing-errors.js';
export type { RunUntilIdleOptions, VirtualClock } from './virtual-clock.js';
