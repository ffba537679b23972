import type { GroupConfigInput, PauseOnFailuresConfig } from '@ricochet/core';
import type { MessageView } from '@ricochet/protocol';
import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker, type TestBroker } from './support/test-broker.js';

/** Millisecond-scale storms: the rule trips on 5 outcomes half failed, and probes every 100–400 ms. */
const STORM_RULE: PauseOnFailuresConfig = {
  failureRatio: 0.5,
  minOutcomes: 5,
  windowMs: 10_000,
  pauseMs: 100,
  maxPauseMs: 400,
};

const GROUP: GroupConfigInput = {
  startFrom: 'earliest',
  maxRetries: 3,
  retryPolicy: { type: 'fixed', delayMs: 50 },
};

const MESSAGES = 30;
/** How long the thing behind the listener is down: long enough for every message to spend its four deliveries. */
const OUTAGE_MS = 1_000;

async function sendMany(broker: TestBroker, count: number): Promise<string[]> {
  await using producer = await startProducer(broker.endpoint);
  const ids: string[] = [];
  for (let i = 0; i < count; i++)
    ids.push((await producer.send({ topic: 'orders', body: `order ${i}` })).messageId);
  return ids;
}

/** Run one outage: every delivery fails for OUTAGE_MS after the first, then every one succeeds. */
async function outage(ruleOn: boolean): Promise<{ dlq: number; committed: number; deliveries: number }> {
  await using broker = await startBroker();
  await broker.admin.putGroup('billing', ruleOn ? { ...GROUP, pauseOnFailures: STORM_RULE } : GROUP);
  await sendMany(broker, MESSAGES);
  let outageEndsAt: number | undefined;
  await using consumer = await startRecordingConsumer(
    broker.endpoint,
    { group: 'billing', subscriptions: { orders: '*' } },
    () => {
      outageEndsAt ??= performance.now() + OUTAGE_MS;
      return performance.now() < outageEndsAt ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
    },
  );
  const stats = await eventually(
    () => broker.admin.getGroup('billing').then((group) => group.stats),
    (s) => s.dlq + s.committed === MESSAGES,
    15_000,
  );
  return { dlq: stats.dlq, committed: stats.committed, deliveries: consumer.deliveries.length };
}

describe('Failure storms (DESIGN.md §11): a group holds its fire while its consumers fail everything', () => {
  it('an outage fills the DLQ with the rule off, and leaves it empty with the rule on', async () => {
    const off = await outage(false);
    expect(off).toMatchObject({ dlq: MESSAGES, committed: 0 });
    expect(off.deliveries).toBe(MESSAGES * 4);

    const on = await outage(true);
    expect(on).toMatchObject({ dlq: 0, committed: MESSAGES });
    // The first deliveries, the probes (one per pauseMs, doubling to 400 ms, over the outage) and
    // the one successful delivery of every message: no more than with the rule off.
    expect(on.deliveries).toBeLessThanOrEqual(off.deliveries);
  });

  it('a single poison message among successes still reaches the DLQ on its schedule with the rule on', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', { ...GROUP, pauseOnFailures: STORM_RULE });
    const [poison] = await sendMany(broker, 20);
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      (message) => (message.messageId === poison ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS),
    );
    const stats = await eventually(
      () => broker.admin.getGroup('billing').then((group) => group.stats),
      (s) => s.dlq === 1 && s.committed === 19,
    );
    expect(stats).toMatchObject({ dlq: 1, committed: 19, waitingRetry: 0, inflight: 0 });
    expect(consumer.deliveries.filter((d) => d.message.messageId === poison)).toHaveLength(4);
    expect((await broker.admin.getGroup('billing')).pause?.state).toBe('closed');
  });

  it('holds every delivery while paused by hand, and delivers them on resume', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', { startFrom: 'earliest' });
    expect((await broker.admin.pauseGroup('billing')).pause).toMatchObject({ manuallyPaused: true });
    await sendMany(broker, 3);
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      () => ConsumeResult.SUCCESS,
    );
    // The consumer asked and was held: the broker counts it.
    await eventually(
      () => broker.admin.fetch('GET', '/metrics').then((response) => response.text()),
      (text) => /ricochet_group_deliveries_held_total\{group="billing",reason="manual"\} [1-9]/.test(text),
    );
    expect(consumer.deliveries).toHaveLength(0);
    expect((await broker.admin.getGroup('billing')).stats).toMatchObject({ ready: 3, inflight: 0 });
    const metrics = await (await broker.admin.fetch('GET', '/metrics')).text();
    expect(metrics).toContain('ricochet_group_paused{group="billing",reason="manual"} 1');

    expect((await broker.admin.resumeGroup('billing')).pause).toMatchObject({ manuallyPaused: false });
    await consumer.delivered(3);
    await eventually(
      () => broker.admin.getGroup('billing').then((group) => group.stats),
      (s) => s.committed === 3,
    );
  });

  it('a retry that falls due while the group is paused is in the history as held (group paused), once', async () => {
    await using broker = await startBroker();
    // Full history: the success after the held retry ends the story the history tells.
    await broker.admin.putGroup('billing', { ...GROUP, history: 'full' });
    const [messageId = ''] = await sendMany(broker, 1);
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      async (message) => {
        if (message.deliveryAttempt > 1) return ConsumeResult.SUCCESS;
        // Paused before the failure is answered: the retry falls due 50 ms later, into the pause.
        await broker.admin.pauseGroup('billing');
        return ConsumeResult.FAILURE;
      },
    );
    const billingOf = (view: MessageView) => view.groups.find((group) => group.group === 'billing');
    const held = await eventually(
      () => broker.admin.getMessage(messageId).then(billingOf),
      (group) => group?.history.some((entry) => entry.result === 'held') === true,
    );
    expect(held?.state).toBe('ready');
    expect(consumer.deliveries).toHaveLength(1);

    await broker.admin.resumeGroup('billing');
    await consumer.delivered(2);
    const done = await eventually(
      () => broker.admin.getMessage(messageId).then(billingOf),
      (group) => group?.state === 'committed',
    );
    const [failed, postponed, committed] = done?.history ?? [];
    expect(done?.history.map((entry) => [entry.deliveryAttempt, entry.result, entry.reason])).toEqual([
      [1, 'failed', expect.any(String)],
      [2, 'held', 'group paused'],
      [2, 'committed', undefined],
    ]);
    // It fell due after the failure, and waited until the resume delivered it.
    expect(postponed?.deliveredAt).toBeGreaterThanOrEqual(failed?.settledAt ?? Infinity);
    expect(postponed?.deliveredAt).toBeLessThanOrEqual(committed?.deliveredAt ?? -Infinity);
  });

  it('an open breaker stays open across a restart, and no attempt is spent meanwhile', async () => {
    const broker = await startBroker();
    // A long pause: no probe goes out while the test looks.
    // Full history: each late attempt's success is in the history too.
    await broker.admin.putGroup('billing', {
      history: 'full',
      ...GROUP,
      pauseOnFailures: { ...STORM_RULE, pauseMs: 600_000, maxPauseMs: 600_000 },
    });
    await sendMany(broker, 10);
    /** Failed deliveries per message before the restart. */
    const failures = new Map<string, number>();
    {
      await using failing = await startRecordingConsumer(
        broker.endpoint,
        { group: 'billing', subscriptions: { orders: '*' } },
        () => ConsumeResult.FAILURE,
      );
      const open = await eventually(
        () => broker.admin.getGroup('billing'),
        (group) => group.pause?.state === 'open' && group.stats.inflight === 0,
      );
      expect(open.stats.dlq).toBe(0);
      for (const { message } of failing.deliveries)
        failures.set(message.messageId, (failures.get(message.messageId) ?? 0) + 1);
    }
    await using restarted = await broker.restart();
    const after = await restarted.admin.getGroup('billing');
    expect(after.pause).toMatchObject({ state: 'open' });
    expect(after.stats).toMatchObject({ dlq: 0, committed: 0 });

    await using consumer = await startRecordingConsumer(
      restarted.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      () => ConsumeResult.SUCCESS,
    );
    await eventually(
      () => restarted.admin.fetch('GET', '/metrics').then((response) => response.text()),
      (text) => /ricochet_group_deliveries_held_total\{group="billing",reason="failures"\} [1-9]/.test(text),
    );
    expect(consumer.deliveries).toHaveLength(0);
    // Every failed message's retry falls due while the group is open (some only once the restarted
    // broker's scheduler reaches it) and is held: wait for each before resuming, or the resume would
    // race the scheduler and release a retry that was never held.
    const heldOf = (view: MessageView) =>
      (view.groups.find((group) => group.group === 'billing')?.history ?? []).filter(
        (entry) => entry.result === 'held',
      );
    await eventually(
      () => Promise.all([...failures.keys()].map((id) => restarted.admin.getMessage(id))),
      (views) => views.every((view) => heldOf(view).length > 0),
      15_000,
    );
    // An operator's resume closes the breaker: every message goes on the attempt after its last
    // failure before the restart — none was spent while the group was open.
    await restarted.admin.resumeGroup('billing');
    await consumer.delivered(10);
    for (const { message } of consumer.deliveries)
      expect(message.deliveryAttempt).toBe((failures.get(message.messageId) ?? 0) + 1);
    await eventually(
      () => restarted.admin.getGroup('billing').then((group) => group.stats),
      (s) => s.committed === 10 && s.dlq === 0,
    );
    // The history explains each late attempt: every failed message's retry, Ready when the breaker
    // opened or due while it was open, is held once (not once per probe or restart), just before
    // the delivery it waited for.
    for (const id of failures.keys()) {
      const view = await restarted.admin.getMessage(id);
      const history = view.groups.find((group) => group.group === 'billing')?.history ?? [];
      const held = heldOf(view);
      expect(held).toEqual([expect.objectContaining({ reason: 'group paused' })]);
      expect(history.slice(-2).map((entry) => [entry.deliveryAttempt, entry.result])).toEqual([
        [held[0]?.deliveryAttempt, 'held'],
        [held[0]?.deliveryAttempt, 'committed'],
      ]);
    }
  });

  it('a simple consumer group under a storm: unacked leases trip it, and nothing reaches the DLQ', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', { ...GROUP, pauseOnFailures: STORM_RULE });
    await sendMany(broker, 20);
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
      awaitDurationMs: 200,
    });
    // The outage: every lease ends unacked (S5 counts it a failure) until the breaker opens.
    let state: string | undefined;
    for (let i = 0; i < 50 && state !== 'open'; i++) {
      await consumer.receive(10, 20);
      state = (await broker.admin.getGroup('billing')).pause?.state;
    }
    expect(state).toBe('open');
    // Recovery: the probe is acked, the breaker closes, and the rest drains.
    let committed = 0;
    for (let i = 0; i < 100 && committed < 20; i++) {
      for (const message of await consumer.receive(10, 30_000)) await consumer.ack(message);
      committed = (await broker.admin.getGroup('billing')).stats.committed;
    }
    expect((await broker.admin.getGroup('billing')).stats).toMatchObject({ committed: 20, dlq: 0 });
  });
});
