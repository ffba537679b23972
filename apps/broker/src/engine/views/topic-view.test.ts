import { describe, expect, it } from 'vitest';
import { RecentMessages } from '../model/recent-messages.js';
import { RetainedRange } from '../model/retained-range.js';
import type { TopicRuntime } from '../model/topic-registry.js';
import { describeTopic } from './topic-view.js';

const runtime = (nextOffset: number): TopicRuntime => ({
  name: 'orders',
  record: { name: 'orders', config: { type: 'fifo', maxBacklogMessages: 10 }, createdAt: 5 },
  retained: new RetainedRange(),
  nextOffset,
  recent: new RecentMessages(),
});

describe('describeTopic', () => {
  it('shows the name, the config and the offsets: every offset handed out is retained', () => {
    expect(describeTopic(runtime(42))).toEqual({
      name: 'orders',
      config: { type: 'fifo', maxBacklogMessages: 10 },
      stats: { firstOffset: 0, nextOffset: 42, messages: 42 },
    });
  });

  it('shows an empty topic with no messages', () => {
    expect(describeTopic(runtime(0)).stats).toEqual({ firstOffset: 0, nextOffset: 0, messages: 0 });
  });

  it('counts the messages retained: the survivors retention kept, and everything from its frontier on', () => {
    const topic = { ...runtime(10), retained: new RetainedRange(6, [2, 4]) };
    expect(describeTopic(topic).stats).toEqual({ firstOffset: 2, nextOffset: 10, messages: 2 + 4 });
  });

  it("shows the retention the broker applies when it is not the topic's own (a DLQ topic)", () => {
    const dlq = { ...runtime(0), name: '%DLQ%billing' };
    const groups = {
      get: (name: string) => (name === 'billing' ? { config: { dlqRetentionMs: 1_000 } } : undefined),
    };
    expect(describeTopic(dlq, groups as never).config).toEqual({
      type: 'fifo',
      maxBacklogMessages: 10,
      retentionMs: 1_000,
    });
  });

  it('reads the current config and offset, not a copy taken earlier', () => {
    const topic = runtime(1);
    topic.nextOffset = 3;
    topic.record = { ...topic.record, config: { type: 'normal' } };
    expect(describeTopic(topic)).toMatchObject({ config: { type: 'normal' }, stats: { messages: 3 } });
  });
});
