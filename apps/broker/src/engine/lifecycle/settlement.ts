import type {
  Clock,
  PushEvent,
  PushState,
  Random,
  RunSettle,
  SimpleEvent,
  SimpleState,
  Transition,
} from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import type { DeliveryAddress, DeliveryRecord } from '../../store/records.js';
import type { DeliveryRecords } from '../model/delivery-records.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import type { EffectApplier } from './effect-applier.js';
import { drivePush, drivePushRun, driveSimple, driveSimpleRun, type Moving } from './lifecycle-driver.js';
import {
  type DecodedLeaseHandles,
  decodeLeaseHandles,
  decodeReceiptHandle,
  encodeReceiptHandle,
  type HandleNames,
} from './receipt-handle.js';
import {
  malformedReceiptHandle,
  rejectionError,
  type SettleFailure,
  type SettleItem,
  type SettleVerb,
  unknownReceiptHandle,
} from './settle-item.js';

export interface SettlementDeps {
  readonly clock: Clock;
  readonly random: Random;
  readonly groups: GroupRegistry;
  readonly records: DeliveryRecords;
  readonly applier: EffectApplier;
}

/** What a consumer asks of one lease it holds. */
type Request = (
  | { readonly verb: SettleVerb; readonly item: SettleItem }
  | { readonly verb: 'changeInvisibleDuration'; readonly invisibleDurationMs: number }
) & {
  /** The principal settling, for the delivery history (DESIGN.md §7). */
  readonly settledBy?: string | undefined;
};

type Found = { readonly group: GroupRuntime; readonly record: DeliveryRecord };

/** A request core accepted: the lease the message holds now, for a new receipt handle. */
type Decided =
  | {
      readonly ok: true;
      readonly address: DeliveryAddress;
      readonly messageId: string;
      readonly lease: number;
    }
  | { readonly ok: false; readonly error: BrokerError };

/**
 * The one way a consumer's verdict reaches a clustering group's message — ack, nack, dead-letter
 * now, release and change of invisibility, from push and simple consumers alike: the handle is
 * decoded once, the verdict becomes the event of the machine that drives the record, core decides,
 * and the applier carries it out. A refusal comes back as the client's error; nothing changes.
 */
export class Settlement {
  readonly #deps: SettlementDeps;

  constructor(deps: SettlementDeps) {
    this.#deps = deps;
  }

  /**
   * Settle a batch: one failure per refused item, indexed into the batch. The handles are decoded
   * once into numbers, and consecutive items of one group and topic whose offsets rise (a
   * consumer's acks, in order) are settled as a run: core decides the run in one step, and its
   * counters and success marks are carried out once (issue 43). Each item's answer is what
   * settling the items one by one gives.
   */
  settle(items: readonly SettleItem[], verb: SettleVerb, settledBy?: string): SettleFailure[] {
    const handles = decodeLeaseHandles(items);
    const { nameIndex, offsets } = handles;
    const failures: SettleFailure[] = [];
    let start = 0;
    while (start < items.length) {
      const name = nameIndex[start] as number;
      if (name < 0) {
        failures.push({ index: start, error: malformedReceiptHandle() });
        start++;
        continue;
      }
      let end = start + 1;
      while (
        end < items.length &&
        nameIndex[end] === name &&
        (offsets[end] as number) > (offsets[end - 1] as number)
      )
        end++;
      this.#settleRun(items, handles, start, end, { verb, settledBy }, failures);
      start = end;
    }
    return failures;
  }

  /**
   * Move a live simple lease's deadline to now + `invisibleDurationMs` under a new lease (S4).
   * @returns the new receipt handle; the old one stops working.
   * @throws BrokerError when the handle is not a live simple lease, or the duration is invalid.
   */
  changeInvisibility(
    receiptHandle: string,
    invisibleDurationMs: number,
  ): { readonly messageId: string; readonly receiptHandle: string } {
    const outcome = this.#request(receiptHandle, { verb: 'changeInvisibleDuration', invisibleDurationMs });
    if (!outcome.ok) throw outcome.error;
    return {
      messageId: outcome.messageId,
      receiptHandle: encodeReceiptHandle({ kind: 'clustering', ...outcome.address, lease: outcome.lease }),
    };
  }

  /**
   * Hand a push delivery back unprocessed (C2): its session ended, or the broker restarted while
   * it was leased. Past its deadline, core makes it the timeout it has become (P2).
   */
  release(address: DeliveryAddress, lease: number): void {
    const found = this.#find(address);
    if (found?.record.consumer !== 'push') return;
    this.#decide(found, address, lease, { verb: 'release', item: { receiptHandle: '' } });
  }

  /**
   * Settle `items[start, end)`, one group's messages on one topic at rising offsets. An item core
   * never sees (its message unknown, its verb meaningless for its machine) changes nothing, so it
   * only ends the part of the run before it when the machine changes (a group consumed both push
   * and simple). Failures go to `failures` in item order.
   */
  #settleRun(
    items: readonly SettleItem[],
    handles: DecodedLeaseHandles,
    start: number,
    end: number,
    asked: { readonly verb: SettleVerb; readonly settledBy: string | undefined },
    failures: SettleFailure[],
  ): void {
    const { group: groupName, topic } = handles.names[handles.nameIndex[start] as number] as HandleNames;
    const group = this.#deps.groups.get(groupName);
    if (!group) {
      for (let index = start; index < end; index++) failures.push({ index, error: unknownReceiptHandle() });
      return;
    }
    // One instant for the run: its settles arrived together, in one frame.
    const atMs = this.#deps.clock.now();
    const firstFailure = failures.length;
    let part = new RunPart();
    for (let index = start; index < end; index++) {
      const address = { group: groupName, topic, offset: handles.offsets[index] as number };
      const record = this.#deps.records.get(address);
      if (!record) {
        failures.push({ index, error: unknownReceiptHandle() });
        continue;
      }
      const lease = handles.leases[index] as number;
      const request = { verb: asked.verb, item: items[index] as SettleItem };
      const event =
        record.consumer === 'push'
          ? pushEventFor(request, atMs, lease)
          : simpleEventFor(request, atMs, lease);
      if (event instanceof BrokerError) {
        failures.push({ index, error: event });
        continue;
      }
      if (part.consumer !== record.consumer) {
        this.#decideRun(group, topic, part, failures);
        part = new RunPart();
      }
      part.consumer = record.consumer;
      part.indices.push(index);
      part.movings.push({
        group,
        address,
        before: record,
        messageId: record.messageId,
        settledBy: asked.settledBy,
      });
      part.settles.push({ offset: address.offset, from: record.state, event });
    }
    this.#decideRun(group, topic, part, failures);
    // Refusals core returned come after the failures found before it: back into item order.
    if (failures.length - firstFailure > 1) {
      const run = failures.splice(firstFailure).sort((a, b) => a.index - b.index);
      failures.push(...run);
    }
  }

  /** Core decides a part of a run; the applier applies it; each refusal becomes its item's failure. */
  #decideRun(group: GroupRuntime, topic: string, part: RunPart, failures: SettleFailure[]): void {
    if (part.consumer === undefined) return;
    const transitions: readonly Transition<PushState | SimpleState, string>[] =
      part.consumer === 'push'
        ? drivePushRun(
            this.#deps,
            group,
            topic,
            part.movings,
            part.settles as RunSettle<PushState, PushEvent>[],
          ).transitions
        : driveSimpleRun(
            this.#deps,
            group,
            topic,
            part.movings,
            part.settles as RunSettle<SimpleState, SimpleEvent>[],
          ).transitions;
    for (const [i, result] of transitions.entries()) {
      if (!result.ok)
        failures.push({ index: part.indices[i] as number, error: rejectionError(result.rejection) });
    }
  }

  #request(receiptHandle: string, request: Request): Decided {
    const handle = decodeReceiptHandle(receiptHandle);
    // A broadcast handle is the broadcast ledger's; a handle naming a queue, the router's.
    if (handle?.kind !== 'clustering' || handle.queue !== undefined) {
      return { ok: false, error: malformedReceiptHandle() };
    }
    const { group, topic, offset, lease } = handle;
    const address = { group, topic, offset };
    const found = this.#find(address);
    if (!found) return { ok: false, error: unknownReceiptHandle() };
    return this.#decide(found, address, lease, request);
  }

  #find(address: DeliveryAddress): Found | undefined {
    const group = this.#deps.groups.get(address.group);
    const record = group ? this.#deps.records.get(address) : undefined;
    return group && record ? { group, record } : undefined;
  }

  /** Core decides for the machine that drives the record; the applier carries out what it decided. */
  #decide(found: Found, address: DeliveryAddress, lease: number, request: Request): Decided {
    const { group, record } = found;
    const atMs = this.#deps.clock.now();
    const { messageId } = record;
    if (record.consumer === 'push') {
      const event = pushEventFor(request, atMs, lease);
      if (event instanceof BrokerError) return { ok: false, error: event };
      const moving = { group, address, before: record, messageId, settledBy: request.settledBy };
      const result = drivePush(this.#deps, moving, record.state, event);
      if (!result.ok) return { ok: false, error: rejectionError(result.rejection) };
      return { ok: true, address, messageId, lease: result.state.lease };
    }
    const event = simpleEventFor(request, atMs, lease);
    if (event instanceof BrokerError) return { ok: false, error: event };
    const moving = { group, address, before: record, messageId, settledBy: request.settledBy };
    const result = driveSimple(this.#deps, moving, record.state, event);
    if (!result.ok) return { ok: false, error: rejectionError(result.rejection) };
    return { ok: true, address, messageId, lease: result.state.lease };
  }
}

/** The push event a request means, or the error for one the push machine has no event for. */
function pushEventFor(request: Request, atMs: number, lease: number): PushEvent | BrokerError {
  if (request.verb === 'changeInvisibleDuration') {
    return BrokerError.of('BAD_REQUEST', 'changeInvisibleDuration applies to simple-consumer leases only');
  }
  const { verb, item } = request;
  if (verb === 'ack') return { type: 'succeeded', atMs, lease };
  if (verb === 'release') return { type: 'released', atMs, lease };
  if (item.deadLetter) {
    const reason = item.reason ?? '';
    return item.nonRetryable
      ? { type: 'deadLettered', atMs, lease, reason, cause: 'nonRetryable' }
      : { type: 'deadLettered', atMs, lease, reason };
  }
  if (item.postpone && item.retryAfterMs !== undefined)
    return { type: 'postponed', atMs, lease, postponeMs: item.retryAfterMs };
  return {
    type: 'failed',
    atMs,
    lease,
    reason: item.reason ?? 'FAILURE',
    ...(item.retryAfterMs === undefined ? {} : { retryAfterMs: item.retryAfterMs }),
  };
}

/**
 * The simple event a request means, or the error for one the simple machine has no event for: a
 * simple lease is acked, dead-lettered, made invisible longer or released (handed back unreceived,
 * the attempt not counted), never failed.
 */
function simpleEventFor(request: Request, atMs: number, lease: number): SimpleEvent | BrokerError {
  if (request.verb === 'changeInvisibleDuration') {
    const { invisibleDurationMs } = request;
    return { type: 'invisibilityChanged', atMs, lease, invisibleDurationMs };
  }
  const { verb, item } = request;
  if (verb === 'ack') return { type: 'succeeded', atMs, lease };
  if (verb === 'release') return { type: 'released', atMs, lease };
  if (verb === 'nack' && item.deadLetter)
    return { type: 'deadLettered', atMs, lease, reason: item.reason ?? '' };
  return BrokerError.of('BAD_REQUEST', `${verb} applies to push deliveries only`);
}

/** The items of a run that one machine decides: their indices, the records they move, their settles. */
class RunPart {
  consumer: 'push' | 'simple' | undefined;
  readonly indices: number[] = [];
  readonly movings: Moving[] = [];
  readonly settles: RunSettle<PushState | SimpleState, PushEvent | SimpleEvent>[] = [];
}
