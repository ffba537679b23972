import type { FifoHeadView } from '@ricochet/protocol';
import type { DeliveryRecords } from '../model/delivery-records.js';
import type { GroupRuntime } from '../model/group-registry.js';
import type { TopicRegistry } from '../model/topic-registry.js';

// A FIFO message group held by its head (P5): one schema in @ricochet/protocol (`fifoHeadViewSchema`).
export type { FifoHeadView };

/**
 * `GET /v1/groups/:group/fifo`: the message groups of a FIFO group that have a head now, each with
 * its head message, ordered by topic and message group. Read-only: it reads the gate and the
 * delivery records, and changes neither.
 */
export function describeFifoHeads(
  group: GroupRuntime,
  deps: { readonly records: DeliveryRecords; readonly topics: TopicRegistry },
  limit: number,
): FifoHeadView[] {
  const heads = [...group.fifoGate.heads()].sort(
    (a, b) => a.topic.localeCompare(b.topic) || a.messageGroup.localeCompare(b.messageGroup),
  );
  return heads.slice(0, limit).map(({ topic, messageGroup, offset }) => {
    const record = deps.records.get({ group: group.name, topic, offset });
    const state = record?.state;
    return {
      topic,
      messageGroup,
      offset,
      messageId: record?.messageId ?? deps.topics.getMessage(topic, offset)?.messageId,
      state: state ? stateOf(state.state) : 'unknown',
      // P6: the attempt a consumer sees is failures + 1, now (Inflight) or at its next delivery.
      deliveryAttempt: state === undefined ? undefined : state.failures + 1,
      retryAtMs: state?.state === 'waitingRetry' ? state.retryAtMs : undefined,
    };
  });
}

function stateOf(state: string): FifoHeadView['state'] {
  return state === 'ready' || state === 'inflight' || state === 'waitingRetry' ? state : 'unknown';
}
