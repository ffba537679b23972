import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../store/records.js';
import { EngineHarness } from '../engine-test-harness.test-support.js';
import type { RestartHorizon } from './restart-horizon.js';
import { TopicRegistry } from './topic-registry.js';

let h: EngineHarness;

const at = (topic: string, offset: number): StoredMessage => ({
  messageId: `${topic}-${offset}`,
  topic,
  offset,
  body: new Uint8Array(),
  bornAt: 0,
  storedAt: 0,
});

beforeEach(() => {
  h = new EngineHarness('horizon');
});

afterEach(() => h.close());

/** The horizon a broker starting now would have: its topic registry's, once loaded. */
function horizonAtStart(): RestartHorizon {
  const topics = new TopicRegistry(h.store, h.clock, false);
  topics.load();
  return topics.restartHorizon;
}

describe('RestartHorizon', () => {
  it('covers each topic up to its last offset stored at start, and nothing past it', async () => {
    h.appendMany('a', 3);
    h.appendMany('b', 1);
    await h.committed();
    const horizon = horizonAtStart();
    expect([0, 1, 2].map((offset) => horizon.covers(at('a', offset)))).toEqual([true, true, true]);
    expect(horizon.covers(at('a', 3))).toBe(false);
    expect(horizon.covers(at('b', 0))).toBe(true);
    expect(horizon.covers(at('b', 1))).toBe(false);
  });

  it('covers nothing of a topic that was empty, unknown, or written after start', async () => {
    h.topics.put('empty', { type: 'normal' });
    h.append('a');
    await h.committed();
    const horizon = horizonAtStart();
    expect(horizon.covers(at('empty', 0))).toBe(false);
    expect(horizon.covers(at('unknown', 0))).toBe(false);
    const later = h.append('a');
    h.append('fresh');
    await h.committed();
    expect(later.offset).toBe(1);
    expect(horizon.covers(later)).toBe(false);
    expect(horizon.covers(at('fresh', 0))).toBe(false);
  });

  it('takes the horizon from what is committed, so a restart sees the last life’s log', async () => {
    h.appendMany('a', 5);
    await h.restart();
    const horizon = horizonAtStart();
    expect(horizon.covers(at('a', 4))).toBe(true);
    expect(horizon.covers(at('a', 5))).toBe(false);
  });
});
