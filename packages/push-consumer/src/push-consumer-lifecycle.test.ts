import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type PendingSubscribe,
  PushConsumerLifecycle,
  type Subscription,
} from './push-consumer-lifecycle.js';

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

const pendingOn = (sessionId: string): PendingSubscribe => ({
  sessionId,
  stash: [],
  settled: Promise.resolve(),
});
const subscriptionOn = (sessionId: string, id = 1): Subscription => ({ id, sessionId, active: true });

/** How `promise` settled so far: `'pending'`, `'resolved'` or the rejection. */
async function settlement(promise: Promise<unknown>): Promise<unknown> {
  let outcome: unknown = 'pending';
  promise.then(
    () => (outcome = 'resolved'),
    (error: unknown) => (outcome = error),
  );
  await Promise.resolve();
  return outcome;
}

/** A lifecycle that began, with a subscribe on the wire on `s1`. */
function subscribingLifecycle() {
  const lifecycle = new PushConsumerLifecycle();
  const { subscribed, started } = lifecycle.begin();
  const pending = pendingOn('s1');
  lifecycle.subscribing(pending);
  return { lifecycle, subscribed, started, pending };
}

describe('PushConsumerLifecycle', () => {
  it('starts idle, subscribing nothing', () => {
    const lifecycle = new PushConsumerLifecycle();
    expect(lifecycle.state).toEqual({ state: 'idle' });
    expect(lifecycle.subscriptionState).toEqual({ state: 'none' });
    expect(lifecycle.subscribes).toBe(false);
  });

  it('goes starting → running with the first subscription, settling the start', async () => {
    const { lifecycle, subscribed, pending } = subscribingLifecycle();
    expect(lifecycle.state.state).toBe('starting');
    expect(lifecycle.subscribes).toBe(true);
    expect(lifecycle.pendingSubscribe).toBe(pending);
    expect(await settlement(subscribed)).toBe('pending');
    const subscription = subscriptionOn('s1');
    lifecycle.subscribed(subscription);
    expect(lifecycle.state).toEqual({
      state: 'running',
      subscription: { state: 'subscribed', subscription },
    });
    expect(lifecycle.subscription).toBe(subscription);
    expect(await settlement(subscribed)).toBe('resolved');
  });

  it('fails a start with the refusal of its first subscribe, and is idle again after', async () => {
    const { lifecycle, subscribed, pending } = subscribingLifecycle();
    lifecycle.subscribeEnded(pending);
    const refused = new Error('404');
    expect(lifecycle.failStart(refused)).toBe(true);
    expect(await settlement(subscribed)).toBe(refused);
    lifecycle.startFailed();
    expect(lifecycle.state).toEqual({ state: 'idle' });
    expect(() => lifecycle.begin()).not.toThrow();
    expect(() => lifecycle.begin()).toThrow('begin() while starting');
  });

  it('leaves a refusal to the consumer once running', () => {
    const { lifecycle } = subscribingLifecycle();
    lifecycle.subscribed(subscriptionOn('s1'));
    expect(lifecycle.failStart(new Error('503'))).toBe(false);
    expect(lifecycle.state.state).toBe('running');
  });

  it("forgets a subscribe that came to nothing, but not another one's", () => {
    const { lifecycle, pending } = subscribingLifecycle();
    lifecycle.subscribeEnded(pendingOn('s1'));
    expect(lifecycle.pendingSubscribe).toBe(pending);
    lifecycle.subscribeEnded(pending);
    expect(lifecycle.subscriptionState).toEqual({ state: 'none' });
  });

  it('retries on its own timer only, and one timer at a time', () => {
    const { lifecycle } = subscribingLifecycle();
    lifecycle.subscribed(subscriptionOn('s1'));
    const first = setTimeout(() => {}, 1_000);
    lifecycle.retrying(first);
    const second = setTimeout(() => {}, 1_000);
    lifecycle.retrying(second);
    expect(vi.getTimerCount()).toBe(1);
    lifecycle.retryDue(first);
    expect(lifecycle.subscriptionState).toEqual({ state: 'retrying', timer: second });
    lifecycle.retryDue(second);
    expect(lifecycle.subscriptionState).toEqual({ state: 'none' });
  });

  it('drops the subscription of the last session on a reconnect (C1), keeping one of the new', () => {
    const { lifecycle } = subscribingLifecycle();
    const old = subscriptionOn('s1');
    lifecycle.subscribed(old);
    lifecycle.reconnected('s2');
    expect(old.active).toBe(false);
    expect(lifecycle.subscriptionState).toEqual({ state: 'none' });
    const current = subscriptionOn('s2', 2);
    lifecycle.subscribed(current);
    lifecycle.reconnected('s2');
    expect(lifecycle.subscription).toBe(current);
  });

  it('calls off a planned retry on a reconnect', () => {
    const { lifecycle } = subscribingLifecycle();
    lifecycle.subscribed(subscriptionOn('s1'));
    lifecycle.retrying(setTimeout(() => {}, 1_000));
    lifecycle.reconnected('s2');
    expect(vi.getTimerCount()).toBe(0);
    expect(lifecycle.subscriptionState).toEqual({ state: 'none' });
  });

  it('closes from starting: the start fails with the close, the subscribe stays for the consumer to stop', async () => {
    const { lifecycle, subscribed, pending } = subscribingLifecycle();
    const closed = Promise.resolve();
    const closedError = new Error('closed');
    lifecycle.close(closed, closedError);
    expect(lifecycle.state).toEqual({
      state: 'closing',
      closed,
      subscription: { state: 'subscribing', pending },
    });
    expect(lifecycle.subscribes).toBe(false);
    expect(await settlement(subscribed)).toBe(closedError);
    lifecycle.startFailed();
    expect(lifecycle.state.state).toBe('closing');
    expect(() => lifecycle.close(closed, closedError)).toThrow('close() while closing');
    lifecycle.finishClosing();
    expect(lifecycle.state).toEqual({ state: 'closed', closed });
    expect(lifecycle.subscriptionState).toEqual({ state: 'none' });
  });

  it('closes from running, calling off a planned retry; a late answer while closing is still recorded', () => {
    const { lifecycle } = subscribingLifecycle();
    lifecycle.subscribed(subscriptionOn('s1'));
    lifecycle.retrying(setTimeout(() => {}, 1_000));
    lifecycle.close(Promise.resolve(), new Error('closed'));
    expect(vi.getTimerCount()).toBe(0);
    expect(lifecycle.subscriptionState).toEqual({ state: 'none' });
    const late = subscriptionOn('s1', 3);
    lifecycle.subscribed(late);
    expect(lifecycle.subscription).toBe(late);
    expect(lifecycle.state.state).toBe('closing');
  });

  it('records no subscription while idle or once closed', () => {
    const lifecycle = new PushConsumerLifecycle();
    lifecycle.subscribed(subscriptionOn('s1'));
    expect(lifecycle.state).toEqual({ state: 'idle' });
    lifecycle.close(Promise.resolve(), new Error('closed'));
    lifecycle.finishClosing();
    lifecycle.subscribing(pendingOn('s1'));
    expect(lifecycle.state.state).toBe('closed');
    expect(lifecycle.pendingSubscribe).toBeUndefined();
  });
});
