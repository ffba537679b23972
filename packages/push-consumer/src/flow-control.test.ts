import type { OneWayFrame } from '@ricochet/client';
import { describe, expect, it } from 'vitest';
import { CreditLoans } from './credit-loans.js';
import type { ResultEntry } from './delivery-results.js';
import { FlowControl } from './flow-control.js';
import type { Subscription } from './push-consumer-lifecycle.js';

/** A result of a delivery that `subscription` brought. */
const resultFor = (subscription: Subscription | undefined, n: number): ResultEntry => ({
  action: 'ack',
  receiptHandle: `h${n}`,
  messageId: `m${n}`,
  sessionId: 's',
  creditTo: subscription,
});

describe('FlowControl over a credit pool', () => {
  it('makes room for a retry that waits at an owner with the result of a delivery an earlier subscription brought', () => {
    let outstanding = 0;
    const frames: { flow: string; frame: OneWayFrame }[] = [];
    const loans = new CreditLoans<FlowControl>({
      capacity: () => 1_000,
      floor: 4,
      outstanding: () => outstanding,
      lend: (flow, credits) => flow.lend(credits),
    });
    const flowOn = (name: string, subscription: Subscription) =>
      new FlowControl({
        maxCachedMessages: 1_000,
        concurrency: 2,
        creditable: () => subscription,
        startableCount: () => 0,
        send: (frame) => frames.push({ flow: name, frame }),
        loans,
      });
    const before: Subscription = { id: 1, sessionId: 's', active: false };
    const home = flowOn('home', { id: 2, sessionId: 's', active: true, scope: 'owned' });
    const owner = flowOn('owner', { id: 7, sessionId: 'o', active: true, scope: 'owned' });
    // Five deliveries the consumer holds, brought by the home session's first subscription
    // (before it moved onto its broker's queues): the pool of 4 is over-committed.
    outstanding = 5;
    expect(home.subscribing(true)).toBe(0);
    expect(owner.subscribing(true)).toBe(0);
    // The owner has a retry due; nothing to lend it yet.
    owner.wanted({ type: 'creditWanted', subscriptionId: 7, ready: 3, late: true });
    expect(frames).toEqual([]);
    // One of those deliveries is settled on the home session.
    outstanding = 4;
    home.sent([resultFor(before, 1)]);
    expect(frames).toEqual([{ flow: 'owner', frame: { type: 'credit', subscriptionId: 7, credits: 1 } }]);
  });
});
