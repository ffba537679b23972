/**
 * The engine's one entrance: what the rest of the broker may use of it. Everything else under
 * engine/ is the engine's own; import it from here, never by its path inside the folder.
 */

export type { BrokerEngineOptions } from './broker-engine.js';
export { BrokerEngine } from './broker-engine.js';
export { BrokerMetrics } from './broker-metrics.js';
export type {
  AdminService,
  Awaitable,
  BrokerService,
  MessagingService,
  ServiceReceiveRequest,
  ServiceSubscribeRequest,
} from './broker-service.js';
export type { DeadLetterPage } from './dead-letter/dead-letter-admin.js';
export { DEFAULT_REDRIVE_RATE_PER_SECOND } from './dead-letter/dead-letter-admin.js';
export { RedrivePacer } from './dead-letter/redrive-pacer.js';
export type { CreditLender, CreditPool } from './dispatch/credit-pool.js';
export { creditPoolOf, grantCredits } from './dispatch/credit-pool.js';
export type { SubscribeRequest } from './dispatch/push-dispatch.js';
export type { ReceiveBudget, ReceiveRequest } from './dispatch/simple-consumption.js';
export type { EngineEvent, EngineEventSink } from './engine-events.js';
export { errorReporterOf, watermarksOf } from './engine-parts.js';
export type { ReceiptHandle } from './lifecycle/receipt-handle.js';
export {
  decodeReceiptHandle,
  encodeReceiptHandle,
  groupAndTopicOfHandle,
  withQueue,
} from './lifecycle/receipt-handle.js';
export type { SettleFailure, SettleItem } from './lifecycle/settle-item.js';
export { malformedReceiptHandle } from './lifecycle/settle-item.js';
export { fmix32 } from './log/murmur-finaliser.js';
export type { RetentionPassReport } from './log/retention.js';
export type { StoreWatermarks } from './log/store-watermarks.js';
export type { NamePage } from './model/name-order.js';
export type {
  AdminCallAnswer,
  AdminCallArgs,
  QueueAdminCall,
  RepeatableAdminCall,
} from './queue-admin-calls.js';
export { answerAdminCall, answerBetweenOwners, QUEUE_ADMIN_CALLS } from './queue-admin-calls.js';
export type { TimerHandle, TimerService } from './timers/timer-service.js';
export { systemTimers } from './timers/timer-service.js';
export type { FifoHeadView } from './views/fifo-view.js';
export type { TopicBacklog } from './views/group-backlog.js';
export { backlogRefusal } from './views/group-backlog.js';
export type { GroupPositions, GroupStats, GroupView } from './views/group-view.js';
export type { MessageGroupView, MessageView } from './views/message-view.js';
export type { TopicStats, TopicView } from './views/topic-view.js';
