import type { ClientFrame } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import type { MessagingService } from '../engine/index.js';
import { InboundBudget } from './frame-inbox.js';
import { openMemorySession } from './memory-session.test-support.js';

/** An engine that records the calls a session makes of it, in order. */
function recordingEngine() {
  const calls: string[] = [];
  const engine = {
    metrics: { rejected: () => {} },
    subscribe: () => {
      calls.push('subscribe');
      return 1;
    },
    credit: () => calls.push('credit'),
    ack: async (handles: readonly string[]) => {
      calls.push(`ack ${handles.join(',')}`);
      return [];
    },
    endSubscriptions: (ids: readonly number[]) => calls.push(`end ${ids.join(',')}`),
  } as unknown as MessagingService;
  return { engine, calls };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

const SUBSCRIBE: ClientFrame = {
  type: 'subscribe',
  id: 1,
  group: 'g',
  subscriptions: { t: '*' },
  maxCachedMessages: 10,
};

/**
 * A session past its hello whose loop budget is nothing: the first frame of each turn is handled,
 * every later one waits for a later turn.
 */
async function sessionOverBudget(engine: MessagingService) {
  const { channel } = openMemorySession(engine, { inbound: new InboundBudget(0) });
  channel.receive({ type: 'hello', protocolVersion: 1 });
  await nextTurn();
  return channel;
}

describe('a session over the loop budget for incoming frames', () => {
  it('handles the frames it held before its end when the connection closes: acks count before C2 releases', async () => {
    const { engine, calls } = recordingEngine();
    const channel = await sessionOverBudget(engine);
    channel.receive(SUBSCRIBE);
    await nextTurn();
    expect(calls).toEqual(['subscribe']);
    channel.receive({ type: 'credit', subscriptionId: 1, credits: 5 });
    channel.receive({ type: 'ack', id: 2, receiptHandles: ['h1', 'h2'] });
    expect(calls).toEqual(['subscribe', 'credit']);
    expect(channel.paused).toBe(true);
    channel.close();
    expect(calls).toEqual(['subscribe', 'credit', 'ack h1,h2', 'end 1']);
  });

  it('handles held frames in a later turn, in order, and reads the connection again once none wait', async () => {
    const { engine, calls } = recordingEngine();
    const channel = await sessionOverBudget(engine);
    channel.receive(SUBSCRIBE);
    channel.receive({ type: 'ack', id: 2, receiptHandles: ['h1'] });
    channel.receive({ type: 'ack', id: 3, receiptHandles: ['h2'] });
    expect(calls).toEqual(['subscribe']);
    for (let turn = 0; turn < 10 && channel.paused; turn++) await nextTurn();
    expect(calls).toEqual(['subscribe', 'ack h1', 'ack h2']);
    expect(channel.paused).toBe(false);
    const answered = channel.sent
      .filter((frame) => frame.type === 'settled')
      .map((frame) => 'id' in frame && frame.id);
    expect(answered).toEqual([2, 3]);
  });
});
