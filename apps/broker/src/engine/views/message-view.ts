import type { Clock } from '@ricochet/core';
import type { MessageGroupView } from '@ricochet/protocol';
import type { BrokerStore } from '../../store/broker-store.js';
import type { HistoryRecord, StoredMessage } from '../../store/records.js';
import { type BroadcastInstance, heldKey } from '../broadcast/broadcast-instance.js';
import type { DeliveryRecords } from '../model/delivery-records.js';
import type { GroupRegistry } from '../model/group-registry.js';
import type { TopicRegistry } from '../model/topic-registry.js';

// Where a message stands for one group: one schema in @ricochet/protocol (`messageGroupViewSchema`).
export type { MessageGroupView };

/** A message and where it stands in every group that consumes its topic. */
export interface MessageView {
  readonly message: StoredMessage;
  readonly groups: MessageGroupView[];
}

export interface MessageViewDeps {
  readonly store: BrokerStore;
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  readonly records: DeliveryRecords;
  readonly clock: Clock;
  /** The instances of a broadcasting group. */
  readonly broadcastInstances: (group: string) => readonly BroadcastInstance[];
}

/**
 * `GET /v1/messages/:messageId`: the message, and per group its state — from the live delivery
 * record when there is one, else from the cursor and the delivery history — with that history
 * (every ended delivery, or all but successes: the group's `history`).
 *
 * Its cost does not grow with the broker's groups: the store's index gives the message's topic
 * and offset, and only the topic's readers are asked (every group with a cursor there, or with a
 * broadcast instance that has one, is one: `GroupRegistry.readersOf`). A walk over every group
 * cost an admin lookup on a broker of 100,000 groups a pass over all of them.
 */
export function describeMessage(messageId: string, deps: MessageViewDeps): MessageView | undefined {
  const location = deps.store.locateMessage(messageId);
  const message = location && deps.topics.getMessage(location.topic, location.offset);
  if (!message) return undefined;
  const history = deps.store.readHistory(messageId);
  const groups: MessageGroupView[] = [];
  for (const group of deps.groups.readersOf(message.topic)) {
    if (group.config.consumeMode === 'broadcasting') {
      for (const instance of deps.broadcastInstances(group.name)) {
        const view = instanceView(instance, message, history, deps.clock.now());
        if (view) groups.push(view);
      }
      continue;
    }
    const cursor = group.cursors.get(message.topic);
    if (cursor === undefined) continue;
    const own = inTimeOrder(
      history.filter(
        (entry) =>
          entry.group === group.name && entry.instance === undefined && entry.topic === message.topic,
      ),
    );
    const record = deps.records.get({
      group: group.name,
      topic: message.topic,
      offset: message.offset,
    });
    const last = own.findLast((entry) => entry.result !== 'held');
    let state: MessageGroupView['state'];
    if (record) state = record.state.state === 'commit' ? 'committed' : record.state.state;
    else if (message.offset >= cursor) state = 'pending';
    else if (last?.result === 'committed') state = 'committed';
    else if (last?.result === 'deadLettered') state = 'dlq';
    // Past the cursor with no record: a delay message waiting for its time; else, when the group
    // keeps successes, one it filtered out by tag. A group keeping failures only has no entry of
    // a success: like RocketMQ's consumed-offset check, the cursor says it was consumed (a message
    // filtered out by tag shows so too; `history: 'full'` tells them apart).
    else if (message.deliverAt !== undefined && message.deliverAt > deps.clock.now()) state = 'pending';
    else state = deps.groups.historyOf(group) === 'failures' ? 'committed' : 'skipped';
    const deliveryAttempt = record?.state.state === 'inflight' ? record.state.deliveryAttempt : undefined;
    groups.push({
      group: group.name,
      state,
      ...(deliveryAttempt === undefined ? {} : { deliveryAttempt }),
      history: own,
    });
  }
  return { message, groups };
}

/**
 * A group's entries in the order they happened. The store keeps them by lease: deliveries in
 * order, and a retry held while the group was paused (DESIGN.md §11) under its negated lease, so
 * apart from them. Each such entry goes after the deliveries made before it fell due, and before
 * one made at that very millisecond (the probe it waited for).
 */
function inTimeOrder(entries: HistoryRecord[]): HistoryRecord[] {
  if (!entries.some((entry) => entry.result === 'held')) return entries;
  const held = entries.filter((entry) => entry.result === 'held');
  const deliveries = entries.filter((entry) => entry.result !== 'held');
  // Array.prototype.sort is stable: held entries first, so a tie puts them before the delivery.
  return [...held, ...deliveries].sort((a, b) => a.deliveredAt - b.deliveredAt);
}

/** Where a message stands for one instance of a broadcasting group (B1), if it reads the topic. */
function instanceView(
  instance: BroadcastInstance,
  message: StoredMessage,
  history: readonly HistoryRecord[],
  nowMs: number,
): MessageGroupView | undefined {
  const cursor = instance.cursors.get(message.topic);
  if (cursor === undefined) return undefined;
  const own = history.filter(
    (entry) =>
      entry.group === instance.group.name &&
      entry.instance === instance.clientId &&
      entry.topic === message.topic,
  );
  const held = instance.held.get(heldKey(message.topic, message.offset));
  const last = own.at(-1)?.result;
  let state: MessageGroupView['state'];
  if (held) state = held.state.state === 'inflight' ? 'inflight' : 'ready';
  else if (message.offset >= cursor) state = 'pending';
  else if (instance.delayed.some(({ topic, offset }) => topic === message.topic && offset === message.offset))
    state = 'pending';
  else if (last === 'committed') state = 'committed';
  else if (last === 'failed' || last === 'timedOut') state = 'failed';
  else state = message.deliverAt !== undefined && message.deliverAt > nowMs ? 'pending' : 'skipped';
  return { group: instance.group.name, instance: instance.clientId, state, history: own };
}
