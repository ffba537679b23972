import type { BrokerFrame, DeliverFrame, SubscribeFrame } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { deliveredMessage } from './delivered-message.js';
import { FakeLeases } from './fake-leases.js';
import { FakePushDispatch } from './fake-push-dispatch.js';
import type { FakeSession } from './fake-session.js';

/** A session that records what it was sent; the dispatch needs nothing else of one. */
function recordingSession(): { session: FakeSession; delivered: () => string[][] } {
  const frames: BrokerFrame[] = [];
  const session = { send: (frame: BrokerFrame) => frames.push(frame) } as unknown as FakeSession;
  const delivered = () =>
    frames
      .filter((frame): frame is DeliverFrame => frame.type === 'deliver')
      .map((frame) => frame.messages.map((message) => message.messageId));
  return { session, delivered };
}

function subscribeFrame(maxCachedMessages: number): SubscribeFrame {
  return { type: 'subscribe', id: 1, group: 'billing', subscriptions: { orders: '*' }, maxCachedMessages };
}

const messages = (...ids: string[]) => ids.map((messageId) => deliveredMessage({ messageId }));

describe('FakePushDispatch', () => {
  it('delivers in order as far as credit goes, leasing each delivery', () => {
    const leases = new FakeLeases();
    const dispatch = new FakePushDispatch(leases);
    const { session, delivered } = recordingSession();
    const subscription = dispatch.subscribe(subscribeFrame(2), session);
    dispatch.add(messages('a', 'b', 'c'));
    dispatch.dispatch();
    expect(delivered()).toEqual([['a', 'b']]);
    expect(dispatch.ready.map((message) => message.messageId)).toEqual(['c']);
    expect([...subscription.unsettled]).toEqual(['lease-1', 'lease-2']);
    expect([...leases.live]).toEqual([
      ['lease-1', 'a'],
      ['lease-2', 'b'],
    ]);
    subscription.credits += 5;
    dispatch.dispatch();
    expect(delivered()).toEqual([['a', 'b'], ['c']]);
    expect(subscription).toMatchObject({ credits: 4, maxUnsettled: 3 });
  });

  it('puts at most 256 messages in one deliver frame', () => {
    const dispatch = new FakePushDispatch(new FakeLeases());
    const { session, delivered } = recordingSession();
    dispatch.subscribe(subscribeFrame(1_000), session);
    dispatch.add(messages(...Array.from({ length: 300 }, (_, index) => `m${index}`)));
    dispatch.dispatch();
    expect(delivered().map((ids) => ids.length)).toEqual([256, 44]);
  });

  it('returns a released delivery to the front of the line, and forgets a settled one', () => {
    const dispatch = new FakePushDispatch(new FakeLeases());
    const { session } = recordingSession();
    const subscription = dispatch.subscribe(subscribeFrame(2), session);
    dispatch.add(messages('a', 'b', 'c'));
    dispatch.dispatch();
    expect(dispatch.settled('lease-1', 'settle')).toBeUndefined();
    const released = dispatch.settled('lease-2', 'release');
    expect(released?.messageId).toBe('b');
    dispatch.requeue(released === undefined ? [] : [released]);
    expect(dispatch.ready.map((message) => message.messageId)).toEqual(['b', 'c']);
    expect(subscription.unsettled.size).toBe(0);
  });

  it('releases the unsettled deliveries of an ended session to other subscriptions (C2)', () => {
    const leases = new FakeLeases();
    const dispatch = new FakePushDispatch(leases);
    const first = recordingSession();
    const second = recordingSession();
    const lost = dispatch.subscribe(subscribeFrame(2), first.session);
    dispatch.add(messages('a', 'b'));
    dispatch.dispatch();
    dispatch.subscribe(subscribeFrame(2), second.session);
    dispatch.endSession(first.session);
    expect(lost.active).toBe(false);
    expect(leases.live.has('lease-1')).toBe(false);
    expect(second.delivered()).toEqual([['a', 'b']]);
    expect(dispatch.subscriptionOf(first.session, lost.subscriptionId)).toBeUndefined();
  });
});
