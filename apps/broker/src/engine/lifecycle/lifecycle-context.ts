import {
  initialReadyState,
  type PushLifecycleContext,
  type Random,
  type ReadyState,
  type SimpleLifecycleContext,
} from '@ricochet/core';
import type { DeliveryRecord } from '../../store/records.js';
import type { GroupRuntime } from '../model/group-registry.js';

/**
 * The settings core's push machine decides with, from the group's config: made once per config
 * (a PUT replaces the config object), not once per delivery and settle.
 */
export function pushContextOf(group: GroupRuntime, random: Random): PushLifecycleContext {
  const { config } = group;
  const cached = pushContexts.get(config);
  if (cached?.random === random) return cached;
  const { retryPolicy, maxRetries, maxRetryDurationMs, maxPostponeMs } = config;
  const context = {
    retryPolicy,
    maxRetries,
    random,
    ...(maxRetryDurationMs === undefined ? {} : { maxRetryDurationMs }),
    ...(maxPostponeMs === undefined ? {} : { maxPostponeMs }),
  };
  pushContexts.set(config, context);
  return context;
}

const pushContexts = new WeakMap<GroupRuntime['config'], PushLifecycleContext>();

/** The settings core's simple machine decides with, from the group's config. */
export function simpleContextOf(group: GroupRuntime): SimpleLifecycleContext {
  return group.config;
}

/**
 * The Ready state a delivery starts from: the record's, or a fresh one when the message has none
 * yet; `undefined` when the record has moved on from Ready. Push and simple share Ready, so either
 * machine may take on a record the other left there.
 */
export function readyStateOf(record: DeliveryRecord | undefined): ReadyState | undefined {
  const state = record?.state ?? initialReadyState();
  return state.state === 'ready' ? state : undefined;
}

/** A record as it stands once the schedule entry it named has fired (that entry is gone). */
export function withoutScheduleKey<TRecord extends DeliveryRecord>(record: TRecord): TRecord {
  if (record.scheduleKey === undefined) return record;
  const { scheduleKey: _fired, ...rest } = record;
  return rest as TRecord;
}
