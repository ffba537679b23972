import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '@ricochet/core';
import type { DeliveredMessage } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveBrokerConfig } from '../config.js';
import { openLmdbStore } from '../store/lmdb-store.js';
import { BrokerEngine } from './broker-engine.js';
import { ManualTimers } from './timers/manual-timers.test-support.js';

let dir: string;
let clock: ManualClock;
let timers: ManualTimers;
let engine: BrokerEngine;

function startEngine(): BrokerEngine {
  const config = resolveBrokerConfig({ dataDir: dir });
  const started = new BrokerEngine({
    store: openLmdbStore({ path: dir, flushPolicy: 'commit' }),
    config,
    clock,
    timers,
  });
  started.start();
  return started;
}

async function send(...ids: string[]): Promise<void> {
  const body = new Uint8Array([1]);
  await engine.send(ids.map((messageId) => ({ messageId, topic: 'orders', body, bornAt: clock.now() })));
}

/** A push subscription whose deliveries land in `into`, with `credits` to take them. */
function subscribe(into: DeliveredMessage[], credits = 10): number {
  return engine.subscribe({
    group: 'billing',
    subscriptions: { orders: '*' },
    maxCachedMessages: credits,
    consumerId: 'test',
    sink: (_id, messages) => into.push(...messages),
  });
}

const turns = async (count = 3) => {
  for (let i = 0; i < count; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-engine-'));
  clock = new ManualClock(Date.UTC(2026, 10, 23));
  timers = new ManualTimers(clock);
  engine = startEngine();
  await engine.putGroup('billing', { startFrom: 'earliest', retryPolicy: { type: 'fixed', delayMs: 1_000 } });
});

afterEach(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('BrokerEngine', () => {
  it('takes a message from send through a push delivery to a durable ack, and counts it', async () => {
    await send('a');
    const delivered: DeliveredMessage[] = [];
    subscribe(delivered);
    await turns();
    expect(delivered.map((m) => [m.messageId, m.deliveryAttempt])).toEqual([['a', 1]]);
    expect(await engine.ack(delivered.map((m) => m.receiptHandle))).toEqual([]);
    expect(engine.describeGroup('billing')?.stats).toMatchObject({ inflight: 0, committed: 1 });
    // The group keeps failures only (the default): the success is its state, with no entry.
    const { state, history } = (await engine.describeMessage('a'))?.groups[0] ?? {};
    expect([state, history]).toEqual(['committed', []]);
  });

  it('settles a mixed batch one item at a time, each refusal at its own index', async () => {
    await send('a', 'b');
    const delivered: DeliveredMessage[] = [];
    subscribe(delivered);
    await turns();
    const [first, second] = delivered;
    const failures = await engine.nack([
      { receiptHandle: 'not-a-handle' },
      { receiptHandle: first?.receiptHandle ?? '', reason: 'boom' },
      { receiptHandle: first?.receiptHandle ?? '' },
      { receiptHandle: second?.receiptHandle ?? '', deadLetter: true },
    ]);
    expect(failures.map(({ index, error }) => [index, error.errorName])).toEqual([
      [0, 'INVALID_RECEIPT_HANDLE'],
      [2, 'INVALID_RECEIPT_HANDLE'],
    ]);
    expect(engine.describeGroup('billing')?.stats).toMatchObject({ waitingRetry: 1, dlq: 1 });
    // The retry comes back after the group's 1 s, as attempt 2.
    await timers.advanceBy(1_000, () => turns());
    await turns();
    expect(delivered.at(-1)).toMatchObject({ messageId: 'a', deliveryAttempt: 2 });
  });

  it('settles a large batch a chunk per turn, other work running between, refusals at their own index', async () => {
    const ids = Array.from({ length: 150 }, (_, i) => `m-${i}`);
    await send(...ids);
    const delivered: DeliveredMessage[] = [];
    subscribe(delivered, 150);
    await turns(10);
    expect(delivered).toHaveLength(150);
    const handles = delivered.map((m) => m.receiptHandle);
    // Refusals in the first, second and third chunk of 64.
    for (const index of [10, 70, 140]) handles[index] = 'not-a-handle';
    let ranBetween = false;
    setImmediate(() => {
      ranBetween = true;
    });
    const acking = engine.ack(handles);
    // The first chunk settled at once; the rest wait for later turns, after what was queued before.
    expect(engine.describeGroup('billing')?.stats).toMatchObject({ committed: 63 });
    expect(ranBetween).toBe(false);
    const failures = await acking;
    expect(ranBetween).toBe(true);
    expect(failures.map(({ index, error }) => [index, error.errorName])).toEqual([
      [10, 'INVALID_RECEIPT_HANDLE'],
      [70, 'INVALID_RECEIPT_HANDLE'],
      [140, 'INVALID_RECEIPT_HANDLE'],
    ]);
    expect(engine.describeGroup('billing')?.stats).toMatchObject({ inflight: 3, committed: 147 });
  });

  it('releases what an ended session held (C2): Ready again, no failure counted', async () => {
    await send('a');
    const delivered: DeliveredMessage[] = [];
    const id = subscribe(delivered);
    await turns();
    engine.endSubscriptions([id]);
    expect(engine.describeGroup('billing')?.stats).toMatchObject({ inflight: 0, ready: 1 });
    const again: DeliveredMessage[] = [];
    subscribe(again);
    await turns();
    expect(again.map((m) => [m.messageId, m.deliveryAttempt])).toEqual([['a', 1]]);
  });

  it('after a restart, takes up what was stored: a push delivery is released, a retry still waits', async () => {
    await send('a', 'b');
    const delivered: DeliveredMessage[] = [];
    subscribe(delivered);
    await turns();
    await engine.nack([{ receiptHandle: delivered[0]?.receiptHandle ?? '' }]);
    await engine.close();
    engine = startEngine();
    expect(engine.describeGroup('billing')?.stats).toMatchObject({ inflight: 0, waitingRetry: 1 });
    const after: DeliveredMessage[] = [];
    subscribe(after);
    await turns();
    expect(after.map((m) => [m.messageId, m.deliveryAttempt])).toEqual([['b', 1]]);
    await timers.advanceBy(1_000, () => turns());
    await turns();
    expect(after.map((m) => m.messageId)).toEqual(['b', 'a']);
  });

  it('refuses work once closed: BROKER_UNAVAILABLE', async () => {
    await engine.close();
    expect(() =>
      engine.receive({
        group: 'billing',
        subscriptions: { orders: '*' },
        maxMessages: 1,
        invisibleDurationMs: 1_000,
        awaitDurationMs: 0,
        consumerId: 'test',
      }),
    ).toThrow(expect.objectContaining({ errorName: 'BROKER_UNAVAILABLE' }));
  });
});
