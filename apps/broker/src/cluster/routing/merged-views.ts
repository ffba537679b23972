import type { DeliveredMessage } from '@ricochet/protocol';
import {
  type DeadLetterPage,
  type FifoHeadView,
  type GroupPositions,
  type GroupView,
  type MessageView,
  type NamePage,
  type TopicView,
  withQueue,
} from '../../engine/index.js';
import type { StoredMessage } from '../../store/records.js';
import { queueOffsetFrom, topicOffset } from './queue-addressing.js';

/*
 * The answers of a store split into queues, built from each queue's engine's answers: deliveries
 * as clients see them, the admin API's views, and the gauges.
 * Counts add up: a topic's `firstOffset` and `nextOffset` are how many messages its queues have
 * deleted and appended in all, and a group's cursor on a topic how many it has dispatched, so with
 * one queue they are what they always were. Offsets that name one message (a message, a DLQ copy,
 * a FIFO head) are topic offsets (`queue-addressing.ts`).
 */

/** A topic over its queues: the config of the first queue that has it, the stats summed. */
export function mergeTopicViews(views: readonly (TopicView | undefined)[]): TopicView | undefined {
  const present = views.filter((view): view is TopicView => view !== undefined);
  const [first] = present;
  if (first === undefined) return undefined;
  let firstOffset = 0;
  let nextOffset = 0;
  let messages = 0;
  for (const { stats } of present) {
    firstOffset += stats.firstOffset;
    nextOffset += stats.nextOffset;
    messages += stats.messages;
  }
  return { name: first.name, config: first.config, stats: { firstOffset, nextOffset, messages } };
}

/** A group over its queues: the config of the first queue that has it, its counts and positions summed. */
export function mergeGroupViews(views: readonly (GroupView | undefined)[]): GroupView | undefined {
  const present = views.filter((view): view is GroupView => view !== undefined);
  const [first] = present;
  if (first === undefined) return undefined;
  const totals = { ready: 0, inflight: 0, waitingRetry: 0, dlq: 0, committed: 0 };
  const topics: Record<string, { cursor: number; firstOffset: number }> = {};
  for (const { stats } of present) {
    totals.ready += stats.ready;
    totals.inflight += stats.inflight;
    totals.waitingRetry += stats.waitingRetry;
    totals.dlq += stats.dlq;
    totals.committed += stats.committed;
    for (const [topic, position] of Object.entries(stats.topics)) {
      const sum = topics[topic] ?? { cursor: 0, firstOffset: 0 };
      sum.cursor += position.cursor;
      sum.firstOffset += position.firstOffset;
      topics[topic] = sum;
    }
  }
  const merged: GroupView = {
    name: first.name,
    config: first.config,
    stats: { ...totals, topics: topics as GroupPositions },
  };
  // Each queue keeps its own breaker, fed the other queues' counts (`storm-counts.ts`): the view
  // shows the most paused one (open over half-open over closed), the earliest next probe, and the
  // whole group's window: its counts added up, and their failure ratio.
  const pauses = present.flatMap((view) => (view.pause === undefined ? [] : [view.pause]));
  if (pauses.length === 0) return merged;
  const rank = { closed: 0, halfOpen: 1, open: 2 } as const;
  const worst = pauses.reduce((a, b) => (rank[b.state] > rank[a.state] ? b : a));
  const probes = pauses.flatMap((pause) => (pause.nextProbeAt === undefined ? [] : [pause.nextProbeAt]));
  const counts = pauses.flatMap((pause) => (pause.counted === undefined ? [] : [pause.counted]));
  const counted = {
    successes: counts.reduce((sum, each) => sum + each.successes, 0),
    failures: counts.reduce((sum, each) => sum + each.failures, 0),
  };
  const total = counted.successes + counted.failures;
  const pause = {
    state: worst.state,
    manuallyPaused: pauses.some((each) => each.manuallyPaused),
    failureRatio:
      total === 0 ? Math.max(...pauses.map((each) => each.failureRatio)) : counted.failures / total,
    ...(probes.length === 0 ? {} : { nextProbeAt: Math.min(...probes) }),
    ...(counts.length === 0 ? {} : { counted }),
  };
  return { ...merged, pause };
}

/** A stored message of `queue` with its topic offsets. */
export function messageOfQueue(message: StoredMessage, queue: number, queues: number): StoredMessage {
  const offset = topicOffset(message.offset, queue, queues);
  const deadLetter = message.deadLetter;
  if (deadLetter === undefined) return { ...message, offset };
  return {
    ...message,
    offset,
    deadLetter: { ...deadLetter, originOffset: topicOffset(deadLetter.originOffset, queue, queues) },
  };
}

/** A message's view as the queue that holds it answered, with topic offsets. */
export function messageViewOfQueue(view: MessageView, queue: number, queues: number): MessageView {
  return { ...view, message: messageOfQueue(view.message, queue, queues) };
}

/** FIFO heads of every queue, with topic offsets, by topic and message group, at most `limit`. */
export function mergeFifoHeads(
  perQueue: readonly (readonly FifoHeadView[])[],
  queues: number,
  limit: number,
): FifoHeadView[] {
  const heads = perQueue.flatMap((views, queue) =>
    views.map((view) => ({ ...view, offset: topicOffset(view.offset, queue, queues) })),
  );
  heads.sort((a, b) =>
    a.topic === b.topic ? compare(a.messageGroup, b.messageGroup) : compare(a.topic, b.topic),
  );
  return heads.slice(0, limit);
}

/** Where each queue's DLQ page starts, for a page of the topic from `fromOffset`. */
export function deadLetterStarts(fromOffset: number, queues: number): number[] {
  return Array.from({ length: queues }, (_, queue) => queueOffsetFrom(fromOffset, queue, queues));
}

/**
 * One DLQ page from each queue's page of up to `limit`, each from {@link deadLetterStarts}: the
 * first `limit` messages by topic offset, and the cursor after the last of them when any queue
 * has more. A queue's page holds every message of that queue below its cursor, and no further:
 * one that stopped early (a page of redriven copies only, or one its owner cut to fit a frame)
 * leaves the merge complete only below its cursor, so messages of other queues past it wait for
 * the next page rather than be listed out of order and the ones between skipped.
 */
export function mergeDeadLetterPages(
  pages: readonly DeadLetterPage[],
  queues: number,
  limit: number,
): DeadLetterPage {
  const resumes = pages.flatMap((page, queue) =>
    page.cursor === null ? [] : [topicOffset(page.cursor, queue, queues)],
  );
  const complete = resumes.length === 0 ? Number.POSITIVE_INFINITY : Math.min(...resumes);
  const messages = pages
    .flatMap((page, queue) => page.messages.map((message) => messageOfQueue(message, queue, queues)))
    .filter((message) => message.offset < complete)
    .sort((a, b) => a.offset - b.offset);
  const taken = messages.slice(0, limit);
  const last = taken.at(-1);
  if (messages.length > taken.length && last !== undefined)
    return { messages: taken, cursor: last.offset + 1 };
  if (resumes.length === 0) return { messages: taken, cursor: null };
  return { messages: taken, cursor: last === undefined ? complete : last.offset + 1 };
}

/** A delivery as the client of a split store sees it: its handle and its offset name its queue. */
export function deliveryOfQueue(message: DeliveredMessage, queue: number, queues: number): DeliveredMessage {
  return {
    ...message,
    receiptHandle: withQueue(message.receiptHandle, queue),
    offset: topicOffset(message.offset, queue, queues),
  };
}

/**
 * The first `limit` names of the queues' pages (a topic a send created exists only in the queues it
 * reached), each the merge of its views in the pages. A name among the first `limit` of all the
 * pages is in the page of every queue that has it: a queue whose page stopped before it has `limit`
 * names before it, and so would the merged page.
 */
export function mergeNamePages<TView extends { readonly name: string }>(
  pages: readonly NamePage<TView>[],
  limit: number,
  merge: (views: readonly TView[]) => TView | undefined,
): NamePage<TView> {
  const byName = new Map<string, TView[]>();
  for (const page of pages) {
    for (const item of page.items) {
      const views = byName.get(item.name);
      if (views === undefined) byName.set(item.name, [item]);
      else views.push(item);
    }
  }
  const names = [...byName.keys()].sort();
  const taken = names.slice(0, limit);
  const more = names.length > taken.length || pages.some((page) => page.lastName !== null);
  const items = taken.flatMap((name) => merge(byName.get(name) ?? []) ?? []);
  return { items, lastName: more ? (taken.at(-1) ?? null) : null };
}

/** A group's gauges in every queue, summed per group. */
export function sumGroupGauges(
  perQueue: readonly Iterable<{
    readonly group: string;
    readonly inflight: number;
    readonly backlog: number;
  }>[],
): Iterable<{ readonly group: string; readonly inflight: number; readonly backlog: number }> {
  const sums = new Map<string, { group: string; inflight: number; backlog: number }>();
  for (const gauges of perQueue) {
    for (const { group, inflight, backlog } of gauges) {
      const sum = sums.get(group);
      if (sum === undefined) sums.set(group, { group, inflight, backlog });
      else {
        sum.inflight += inflight;
        sum.backlog += backlog;
      }
    }
  }
  return sums.values();
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
