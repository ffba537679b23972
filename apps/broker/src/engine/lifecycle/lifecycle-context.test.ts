import { initialReadyState } from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import type { DeliveryRecord } from '../../store/records.js';
import { GroupRuntime } from '../model/group-registry.js';
import { pushContextOf, readyStateOf, simpleContextOf, withoutScheduleKey } from './lifecycle-context.js';

const config = {
  maxRetries: 3,
  retryPolicy: { type: 'fixed', delayMs: 250 },
  fifo: false,
  consumeMode: 'clustering',
  consumptionTimeoutMs: 1_000,
  startFrom: 'latest',
  broadcastInstanceTtlMs: 1_000,
  dlqRetentionMs: 1_000,
} as const;
const group = new GroupRuntime({ name: 'g', config, createdAt: 0 });

const inflight: DeliveryRecord = {
  consumer: 'simple',
  messageId: 'm',
  scheduleKey: ['g', 5, 't', 0],
  consumerId: 'c',
  state: { state: 'inflight', lease: 1, failures: 0, releases: 0, leaseDeadlineMs: 5, deliveryAttempt: 1 },
};

describe('lifecycle context', () => {
  it('decides with the group config: push with its retry policy and random, simple with maxRetries', () => {
    const random = () => 0.25;
    expect(pushContextOf(group, random)).toEqual({ retryPolicy: config.retryPolicy, maxRetries: 3, random });
    expect(simpleContextOf(group).maxRetries).toBe(3);
  });

  it('starts a delivery from the record Ready state, a fresh one without a record, none otherwise', () => {
    expect(readyStateOf(undefined)).toEqual(initialReadyState());
    const ready = { state: 'ready', failures: 2, releases: 1, lease: 7 } as const;
    expect(readyStateOf({ consumer: 'push', messageId: 'm', state: ready })).toBe(ready);
    expect(readyStateOf(inflight)).toBeUndefined();
  });

  it('drops the schedule key of a fired entry, and leaves a record without one as it is', () => {
    const fired = withoutScheduleKey(inflight);
    expect(fired).not.toHaveProperty('scheduleKey');
    expect(fired).toEqual({ consumer: 'simple', messageId: 'm', consumerId: 'c', state: inflight.state });
    expect(inflight.scheduleKey).toEqual(['g', 5, 't', 0]);
    expect(withoutScheduleKey(fired)).toBe(fired);
  });
});
