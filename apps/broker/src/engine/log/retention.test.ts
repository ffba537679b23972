import { describe, expect, it } from 'vitest';
import { startTestBroker } from '../../broker.test-support.js';
import type { BrokerStore } from '../../store/broker-store.js';

/** Store reads of messages, per topic: what a retention pass looked at. */
function countingReads(reads: Map<string, number>): (store: BrokerStore) => BrokerStore {
  const counted = new Set<string | symbol>(['readMessages', 'getMessage']);
  return (store) =>
    new Proxy(store, {
      get(target, key) {
        const value: unknown = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (counted.has(key)) reads.set(String(args[0]), (reads.get(String(args[0])) ?? 0) + 1);
          return value.apply(target, args);
        };
      },
    });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Retention passes', () => {
  it('read nothing of a topic with nothing stored past its frontier: a broker of many idle topics costs a pass a check each', async () => {
    const reads = new Map<string, number>();
    await using broker = await startTestBroker(
      { dedupWindowMs: 0, retentionCheckIntervalMs: 3_600_000, flushPolicy: 'commit' },
      { wrapStore: countingReads(reads) },
    );
    const { engine } = broker;
    await engine.putTopic('emptied', { type: 'normal', retentionMs: 1 });
    await engine.putTopic('never-written', { type: 'normal' });
    await engine.putTopic('kept', { type: 'normal' });
    const message = (topic: string, i: number) => ({
      messageId: `${topic}-${i}`.padEnd(32, '0'),
      topic,
      body: new Uint8Array(8),
      bornAt: Date.now(),
    });
    await engine.send([0, 1, 2].map((i) => message('emptied', i)));
    await engine.send([message('kept', 0)]);
    await sleep(5);
    expect((await engine.runRetentionPass()).deletedMessages).toBe(3);

    reads.clear();
    expect((await engine.runRetentionPass()).deletedMessages).toBe(0);
    expect(reads.get('emptied')).toBeUndefined();
    expect(reads.get('never-written')).toBeUndefined();
    // A topic holding messages still has its first one looked at (from memory or the store).
    expect((await engine.describeTopic('kept'))?.stats.messages).toBe(1);
    expect((await engine.describeTopic('emptied'))?.stats).toMatchObject({
      firstOffset: 3,
      nextOffset: 3,
      messages: 0,
    });
  });
});
