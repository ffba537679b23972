import { DEFAULT_DLQ_RETENTION_MS } from '@ricochet/core';
import type { StoreContents } from './store-contents.test-support.js';

const T0 = 1_700_000_000_000;
const SECOND_MS = 1_000;
const MINUTE_MS = 60 * SECOND_MS;
const bytes = (text: string) => new Uint8Array(Buffer.from(text));

/**
 * One of every kind of record and every variant the broker writes, each field in the order the
 * broker of layout 1 builds it (core's transitions write a state's own fields first, then its
 * counters). Written in this order into an empty directory, it gives `layout-v1.golden.json`.
 */
export const LAYOUT_V1_SAMPLE: StoreContents = {
  topics: [
    { name: '%DLQ%billing', config: { type: 'normal' }, createdAt: T0 + 9 },
    { name: 'orders', config: { type: 'normal' }, createdAt: T0 },
    { name: 'payments', config: { type: 'fifo', maxBacklogMessages: 5_000 }, createdAt: T0 + 1 },
    { name: 'reminders', config: { type: 'delay' }, createdAt: T0 + 2 },
  ],
  groups: [
    {
      name: 'audit',
      config: {
        maxRetries: 3,
        retryPolicy: { type: 'exponential', initialMs: 100, multiplier: 2, maxMs: 60_000, jitter: 0.2 },
        fifo: false,
        consumeMode: 'broadcasting',
        consumptionTimeoutMs: MINUTE_MS,
        startFrom: 'earliest',
        broadcastInstanceTtlMs: 60 * MINUTE_MS,
        dlqRetentionMs: DEFAULT_DLQ_RETENTION_MS,
      },
      createdAt: T0 + 3,
    },
    {
      name: 'billing',
      config: {
        maxRetries: 16,
        retryPolicy: {
          type: 'stepped',
          delaysMs: [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1_200, 1_800, 3_600, 7_200].map(
            (seconds) => seconds * SECOND_MS,
          ),
        },
        fifo: false,
        consumeMode: 'clustering',
        consumptionTimeoutMs: 15 * MINUTE_MS,
        startFrom: 'latest',
        broadcastInstanceTtlMs: 24 * 60 * MINUTE_MS,
        dlqRetentionMs: DEFAULT_DLQ_RETENTION_MS,
      },
      createdAt: T0 + 4,
    },
    {
      name: 'ledger',
      config: {
        maxRetries: 2,
        retryPolicy: { type: 'fixed', delayMs: 3 * SECOND_MS },
        fifo: true,
        consumeMode: 'clustering',
        consumptionTimeoutMs: 15 * MINUTE_MS,
        startFrom: 'earliest',
        broadcastInstanceTtlMs: 24 * 60 * MINUTE_MS,
        dlqRetentionMs: DEFAULT_DLQ_RETENTION_MS,
      },
      createdAt: T0 + 5,
    },
  ],
  cursors: [
    { group: 'billing', topic: 'orders', nextOffset: 3 },
    { group: 'ledger', topic: 'payments', nextOffset: 1 },
  ],
  counters: [{ group: 'billing', committed: 10, deadLettered: 2, redriven: 1 }],
  broadcastInstances: [
    { group: 'audit', clientId: 'auditor-1', positions: { orders: 2, reminders: 0 }, lastSeenAt: T0 + 50 },
  ],
  messages: [
    {
      messageId: 'm-dlq-0',
      topic: '%DLQ%billing',
      offset: 0,
      properties: { origin: 'orders' },
      body: bytes('{"orderId":7}'),
      bornAt: T0 + 10,
      storedAt: T0 + 40,
      deadLetter: {
        group: 'billing',
        originTopic: 'orders',
        originOffset: 0,
        attempts: 17,
        reason: 'boom',
        deadLetteredAt: T0 + 40,
        lastLease: 3,
        redrivenAt: T0 + 45,
      },
    },
    {
      messageId: 'm-dlq-1',
      topic: '%DLQ%billing',
      offset: 1,
      body: bytes('x'),
      bornAt: T0 + 11,
      storedAt: T0 + 41,
      deadLetter: {
        group: 'billing',
        originTopic: 'orders',
        originOffset: 5,
        attempts: 1,
        reason: 'dead-lettered by the consumer',
        deadLetteredAt: T0 + 41,
        lastLease: 1,
      },
    },
    {
      messageId: 'm-orders-0',
      topic: 'orders',
      offset: 0,
      body: bytes('{"orderId":7}'),
      bornAt: T0 + 10,
      storedAt: T0 + 12,
    },
    {
      messageId: 'm-orders-1',
      topic: 'orders',
      offset: 1,
      tag: 'created',
      keys: ['order-8', 'customer-2'],
      properties: { source: 'web', trace: 'abc' },
      body: bytes('{"orderId":8}'),
      bornAt: T0 + 13,
      storedAt: T0 + 14,
    },
    {
      messageId: 'm-orders-2',
      topic: 'orders',
      offset: 2,
      body: new Uint8Array(0),
      bornAt: T0 + 15,
      storedAt: T0 + 16,
    },
    {
      messageId: 'm-payments-0',
      topic: 'payments',
      offset: 0,
      messageGroup: 'account-1',
      body: bytes('pay'),
      bornAt: T0 + 17,
      storedAt: T0 + 18,
    },
    {
      messageId: 'm-reminders-0',
      topic: 'reminders',
      offset: 0,
      tag: 'later',
      body: bytes('remind'),
      bornAt: T0 + 19,
      storedAt: T0 + 20,
      deliverAt: T0 + 10 * MINUTE_MS,
    },
  ],
  locations: [
    ['m-orders-0', { topic: 'orders', offset: 0, storedAt: T0 + 12 }],
    ['m-orders-1', { topic: 'orders', offset: 1, storedAt: T0 + 14 }],
    ['m-reminders-0', { topic: 'reminders', offset: 0, storedAt: T0 + 20 }],
  ],
  deliveries: [
    {
      address: { group: 'billing', topic: 'orders', offset: 0 },
      record: {
        consumer: 'push',
        state: { state: 'ready', failures: 0, releases: 0, lease: 3 },
        messageId: 'm-orders-0',
      },
    },
    {
      address: { group: 'billing', topic: 'orders', offset: 1 },
      record: {
        consumer: 'push',
        state: {
          state: 'inflight',
          leaseDeadlineMs: T0 + 15 * MINUTE_MS,
          deliveryAttempt: 2,
          failures: 1,
          releases: 1,
          lease: 3,
          lastFailureReason: 'consumption timeout',
        },
        messageId: 'm-orders-1',
        consumerId: 'worker-1',
        deliveredAt: T0 + 30,
      },
    },
    {
      address: { group: 'billing', topic: 'orders', offset: 2 },
      record: {
        consumer: 'push',
        state: {
          state: 'waitingRetry',
          retryNumber: 1,
          retryDelayMs: 10 * SECOND_MS,
          retryAtMs: T0 + 31 + 10 * SECOND_MS,
          failures: 1,
          releases: 0,
          lease: 1,
          lastFailureReason: 'listener threw',
        },
        messageId: 'm-orders-2',
        scheduleKey: ['billing', T0 + 31 + 10 * SECOND_MS, 'orders', 2],
      },
    },
    {
      address: { group: 'billing', topic: 'orders', offset: 5 },
      record: {
        consumer: 'push',
        state: {
          state: 'dlq',
          reason: 'boom',
          failures: 17,
          releases: 0,
          lease: 17,
          lastFailureReason: 'boom',
        },
        messageId: 'm-orders-5',
      },
    },
    {
      address: { group: 'billing', topic: 'reminders', offset: 0 },
      record: {
        consumer: 'simple',
        state: {
          state: 'ready',
          failures: 1,
          releases: 0,
          lease: 1,
          lastFailureReason: 'invisible duration expired without ack',
        },
        messageId: 'm-reminders-0',
      },
    },
    {
      address: { group: 'ledger', topic: 'payments', offset: 0 },
      record: {
        consumer: 'simple',
        state: {
          state: 'inflight',
          leaseDeadlineMs: T0 + 30 * SECOND_MS,
          deliveryAttempt: 1,
          failures: 0,
          releases: 0,
          lease: 1,
        },
        messageId: 'm-payments-0',
        scheduleKey: ['ledger', T0 + 30 * SECOND_MS, 'payments', 0],
        consumerId: 'worker-2',
        deliveredAt: T0 + 32,
      },
    },
    {
      address: { group: 'ledger', topic: 'payments', offset: 1 },
      record: {
        consumer: 'simple',
        state: { state: 'commit', failures: 0, releases: 0, lease: 1 },
        messageId: 'm-payments-1',
      },
    },
  ],
  schedule: [
    { key: ['billing', T0 + 31 + 10 * SECOND_MS, 'orders', 2], entry: { kind: 'retryDue' } },
    { key: ['billing', T0 + 10 * MINUTE_MS, 'reminders', 0], entry: { kind: 'delayDue' } },
    { key: ['ledger', T0 + 30 * SECOND_MS, 'payments', 0], entry: { kind: 'leaseExpiry', lease: 1 } },
  ],
  history: [
    [
      'm-orders-1',
      {
        group: 'audit',
        instance: 'auditor-1',
        topic: 'orders',
        offset: 1,
        lease: 1,
        deliveryAttempt: 1,
        consumer: 'push',
        consumerId: 'auditor-1',
        deliveredAt: T0 + 21,
        settledAt: T0 + 22,
        result: 'committed',
      },
    ],
    [
      'm-orders-1',
      {
        group: 'billing',
        topic: 'orders',
        offset: 1,
        lease: 1,
        deliveryAttempt: 1,
        consumer: 'push',
        consumerId: 'worker-1',
        deliveredAt: T0 + 23,
        settledAt: T0 + 24,
        result: 'timedOut',
        reason: 'consumption timeout',
      },
    ],
    [
      'm-orders-1',
      {
        group: 'billing',
        topic: 'orders',
        offset: 1,
        lease: 2,
        deliveryAttempt: 2,
        consumer: 'push',
        consumerId: 'worker-1',
        deliveredAt: T0 + 25,
        settledAt: T0 + 26,
        result: 'released',
      },
    ],
    [
      'm-payments-1',
      {
        group: 'ledger',
        topic: 'payments',
        offset: 1,
        lease: 1,
        deliveryAttempt: 1,
        consumer: 'simple',
        consumerId: 'worker-2',
        deliveredAt: T0 + 27,
        settledAt: T0 + 28,
        result: 'committed',
      },
    ],
  ],
};
