import { assertNever } from './assert-never.js';
import { delayLevelToMs } from './delay-levels.js';
import type { TopicType } from './group-config.js';

/**
 * The delay fields of a message as a producer sends it (rule T1). The wire accepts at most one of
 * them; when several are given anyway, `deliverAt` wins over `delayMs`, which wins over `delayLevel`.
 */
export interface SendDelay {
  /** Absolute delivery time, epoch ms. */
  readonly deliverAt?: number;
  /** Delay from the moment the broker accepts the message. */
  readonly delayMs?: number;
  /** One of RocketMQ's 18 delay levels, 1-based. */
  readonly delayLevel?: number;
}

/**
 * T1: the absolute delivery time of a message accepted at `nowMs`, or `undefined` for a message
 * without any delay field. A delay level outside 1–18 (the wire refuses one) adds no delay.
 */
export function deliverAtOf(delay: SendDelay, nowMs: number): number | undefined {
  if (delay.deliverAt !== undefined) return delay.deliverAt;
  if (delay.delayMs !== undefined) return nowMs + delay.delayMs;
  if (delay.delayLevel !== undefined) return nowMs + (delayLevelToMs(delay.delayLevel) ?? 0);
  return undefined;
}

/** Which guard of its topic's type a message breaks (DESIGN.md §2). */
export type TopicTypeRule =
  /** A `fifo` topic takes only messages with a `messageGroup`. */
  | 'fifoNeedsMessageGroup'
  /** A `fifo` topic takes no delay messages. */
  | 'fifoTakesNoDelay'
  /** A `delay` topic takes only messages with `deliverAt`, `delayMs` or `delayLevel`. */
  | 'delayNeedsDelay'
  /** A `delay` topic takes no `messageGroup`. */
  | 'delayTakesNoMessageGroup'
  /** A `normal` topic takes no `messageGroup`: that needs a `fifo` topic. */
  | 'normalTakesNoMessageGroup';

/** A message that does not fit its topic's type: which rule it breaks, said for a person. */
export interface TopicTypeViolation {
  readonly rule: TopicTypeRule;
  readonly message: string;
}

/** What the topic-type guard reads of a message. */
export interface TopicTypeCheckedMessage extends SendDelay {
  readonly topic: string;
  readonly messageGroup?: string;
}

/**
 * The topic type is a guard, as in RocketMQ (DESIGN.md §2): the rule `message` breaks on a topic
 * of type `type`, or `undefined` when it fits. A message counts as delayed when it carries any
 * delay field, even a zero one. A violation is a value; the broker answers it with
 * `TOPIC_TYPE_MISMATCH`.
 */
export function topicTypeViolation(
  type: TopicType,
  message: TopicTypeCheckedMessage,
): TopicTypeViolation | undefined {
  const delayed = deliverAtOf(message, 0) !== undefined;
  const hasGroup = message.messageGroup !== undefined;
  const topic = `topic "${message.topic}"`;
  switch (type) {
    case 'fifo':
      if (!hasGroup)
        return violation('fifoNeedsMessageGroup', `${topic} is fifo: a message needs a messageGroup`);
      if (delayed) return violation('fifoTakesNoDelay', `${topic} is fifo: it takes no delay messages`);
      return undefined;
    case 'delay':
      if (!delayed) {
        return violation(
          'delayNeedsDelay',
          `${topic} is a delay topic: a message needs deliverAt, delayMs or delayLevel`,
        );
      }
      if (hasGroup)
        return violation('delayTakesNoMessageGroup', `${topic} is a delay topic: it takes no messageGroup`);
      return undefined;
    case 'normal':
      if (hasGroup) {
        return violation(
          'normalTakesNoMessageGroup',
          `${topic} is normal: a message with a messageGroup needs a fifo topic`,
        );
      }
      return undefined;
    default:
      return assertNever(type, 'topic type');
  }
}

function violation(rule: TopicTypeRule, message: string): TopicTypeViolation {
  return { rule, message };
}
