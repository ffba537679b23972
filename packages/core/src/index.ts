export { assertNever } from './assert-never.js';
export { type Clock, ManualClock, systemClock } from './clock.js';
export { DELAY_LEVELS_MS, delayLevelToMs } from './delay-levels.js';
export { DELIVERY_BURST_MS, DeliveryRateBucket, deliveryBurst } from './delivery-rate.js';
export { ExponentialBackoff, type ExponentialBackoffOptions } from './exponential-backoff.js';
export {
  type Admission,
  admitDelivery,
  BREAKER_STATES,
  type BreakerState,
  type BreakerStateName,
  DEFAULT_PAUSE_ON_FAILURES,
  FAILURE_WINDOW_BUCKETS,
  type GroupPauseEffect,
  type GroupPauseEvent,
  type GroupPauseEventType,
  type GroupPauseState,
  type GroupPauseTransition,
  groupPauseTransition,
  type HoldReason,
  initialGroupPauseState,
  type OutcomeCounts,
  type PauseOnFailuresConfig,
  resolvePauseOnFailures,
  restoreGroupPauseState,
  type StoredGroupPause,
  type StormOutcome,
  storedGroupPause,
  validatePauseOnFailures,
  type WindowBucket,
  windowCounts,
} from './failure-storm.js';
export { FifoGate } from './fifo-gate.js';
export {
  type ConsumeMode,
  DEFAULT_BROADCAST_INSTANCE_TTL_MS,
  DEFAULT_CONSUMPTION_TIMEOUT_MS,
  DEFAULT_DLQ_RETENTION_MS,
  DEFAULT_RETENTION_MS,
  DEFAULT_TOPIC_CONFIG,
  type DeliveryHistoryMode,
  type GroupConfig,
  type GroupConfigInput,
  resolveGroupConfig,
  resolveTopicConfig,
  type StartFrom,
  type TopicConfig,
  type TopicType,
} from './group-config.js';
export {
  DEFAULT_HANDOVER_BACKOFF,
  type HandoverBackoffOptions,
  handoverRetryDelayMs,
} from './handover-backoff.js';
export {
  BROADCAST_STATES,
  BROADCAST_TERMINAL_STATES,
  BROADCAST_TRANSITIONS,
  type BroadcastEvent,
  type BroadcastEventType,
  type BroadcastOutcome,
  type BroadcastState,
  type BroadcastStateName,
  type BroadcastTransition,
  broadcastTransition,
  initialBroadcastState,
} from './lifecycle/broadcast-lifecycle.js';
export {
  DEAD_LETTER_CAUSES,
  type DeadLetterCause,
  retryBudgetSpent,
} from './lifecycle/dead-letter-cause.js';
export type {
  DeliveryEffect,
  DeliveryEffectType,
  DeliveryOutcome,
  GroupCounter,
} from './lifecycle/effects.js';
export { DEAD_LETTERED_BY_CONSUMER_REASON } from './lifecycle/lease-steps.js';
export {
  DEFAULT_MAX_POSTPONE_MS,
  POSTPONED_PAST_BUDGET_REASON,
  POSTPONED_TOO_LONG_REASON,
} from './lifecycle/postpone.js';
export {
  CONSUMPTION_TIMEOUT_REASON,
  initialPushState,
  PUSH_STATES,
  PUSH_TERMINAL_STATES,
  PUSH_TRANSITIONS,
  type PushEvent,
  type PushEventType,
  type PushLifecycleContext,
  type PushState,
  type PushStateName,
  type PushTransition,
  pushTransition,
} from './lifecycle/push-lifecycle.js';
export {
  decidePushRun,
  decideSimpleRun,
  type RunDecision,
  type RunSettle,
} from './lifecycle/settle-run.js';
export {
  initialSimpleState,
  LEASE_EXPIRED_REASON,
  MAX_INVISIBLE_DURATION_MS,
  MIN_INVISIBLE_DURATION_MS,
  SIMPLE_STATES,
  SIMPLE_TERMINAL_STATES,
  SIMPLE_TRANSITIONS,
  type SimpleEvent,
  type SimpleEventType,
  type SimpleLifecycleContext,
  type SimpleState,
  type SimpleStateName,
  type SimpleTransition,
  simpleTransition,
} from './lifecycle/simple-lifecycle.js';
export {
  type DeliveryCounters,
  initialReadyState,
  type ReadyState,
  type Rejection,
  type RejectionReason,
  redrivenState,
  type Transition,
  type TransitionEdge,
} from './lifecycle/transition.js';
export { type Random, seededRandom, systemRandom } from './random.js';
export {
  applyJitter,
  DEFAULT_FIFO_RETRY_POLICY,
  DEFAULT_MAX_RETRIES,
  DEFAULT_PUSH_RETRY_POLICY,
  type ExponentialRetryPolicy,
  type FixedRetryPolicy,
  type RetryPolicy,
  retryDelayMs,
  type SteppedRetryPolicy,
} from './retry-policy.js';
export {
  MAX_RETRY_DELAY_MS,
  MAX_RETRY_POLICY_STEPS,
  type PolicyIssue,
  type RetryPolicyValidation,
  validateRetryPolicy,
} from './retry-policy-validation.js';
export {
  deliverAtOf,
  type SendDelay,
  type TopicTypeCheckedMessage,
  type TopicTypeRule,
  type TopicTypeViolation,
  topicTypeViolation,
} from './send-rules.js';
