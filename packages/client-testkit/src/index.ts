export { deliveredMessage } from './delivered-message.js';
export { FakeBroker, type FakeBrokerOptions, type FrameHandler } from './fake-broker.js';
export { type FakeBrokerPerTest, fakeBrokerPerTest } from './fake-broker-per-test.js';
export type { FakeSubscription } from './fake-push-dispatch.js';
export {
  answerEachMessage,
  holdSendAnswers,
  messageIdsByFrame,
  type SendRefusal,
} from './fake-send-answers.js';
export { FakeSession } from './fake-session.js';
export {
  creditsGranted,
  nackItemsSent,
  pushNumberedMessages,
  readyNumberedMessages,
  receiptHandlesSent,
} from './fake-traffic.js';
export { FAST_BACKOFF } from './fast-backoff.js';
export { gate } from './gate.js';
export { twoOwnerQueueMap } from './queue-maps.js';
export { rejectionOf } from './rejection-of.js';
export { nextStatus, recordStatuses, type StateStatus, type StatusSource } from './status-feeds.js';
