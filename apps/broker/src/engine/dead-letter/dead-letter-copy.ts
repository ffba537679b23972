import type { Clock, DeliveryEffect } from '@ricochet/core';
import { dlqTopicOf } from '@ricochet/protocol';
import type { DeliveryAddress } from '../../store/records.js';
import type { EngineEventSink } from '../engine-events.js';
import type { AppendWaker } from '../log/append-waker.js';
import type { GroupRuntime } from '../model/group-registry.js';
import type { TopicRegistry } from '../model/topic-registry.js';

export interface DeadLetterCopyDeps {
  readonly clock: Clock;
  readonly topics: TopicRegistry;
  readonly appendWaker: AppendWaker;
  /** X7: told of every copy, once appended. */
  readonly onEvent?: EngineEventSink | undefined;
}

/**
 * D1: append a copy of a dead-lettered message to `%DLQ%<group>`: same id, body and properties, a
 * new offset there, and where it came from and why. It goes through the topic registry's append
 * like any send, so its store write is queued before anyone can read it.
 */
export function copyToDeadLetterQueue(
  deps: DeadLetterCopyDeps,
  group: GroupRuntime,
  address: DeliveryAddress,
  effect: Extract<DeliveryEffect, { type: 'deadLetter' }>,
): void {
  const message = deps.topics.getMessage(address.topic, address.offset);
  if (!message) return;
  const dlq = deps.topics.require(dlqTopicOf(group.name));
  const nowMs = deps.clock.now();
  const {
    topic: _topic,
    offset: _offset,
    storedAt: _storedAt,
    deadLetter: _previous,
    deliverAt: _deliverAt,
    ...content
  } = message;
  const copy = deps.topics.append(dlq, (offset) => ({
    ...content,
    topic: dlq.name,
    offset,
    storedAt: nowMs,
    deadLetter: {
      group: group.name,
      originTopic: address.topic,
      originOffset: address.offset,
      attempts: effect.attempts,
      reason: effect.reason,
      deadLetteredAt: nowMs,
      cause: effect.cause,
      ...(effect.firstFailedAtMs === undefined ? {} : { firstFailedAt: effect.firstFailedAtMs }),
      lastLease: effect.lastLease,
    },
  }));
  deps.appendWaker.appended(dlq.name);
  deps.onEvent?.({ type: 'dead_lettered', group: group.name, atMs: nowMs, copy });
}
