import { describe, expect, it } from 'vitest';
import { checkAdminAnswer, groupViewSchema, storeAnswerSchema } from './admin.js';

const group = {
  name: 'orders',
  config: {
    maxRetries: 2,
    retryPolicy: { type: 'stepped', delaysMs: [100, 200] },
    fifo: false,
    consumeMode: 'clustering',
    consumptionTimeoutMs: 30_000,
    startFrom: 'latest',
    broadcastInstanceTtlMs: 86_400_000,
    dlqRetentionMs: 259_200_000,
  },
  stats: {
    ready: 1,
    inflight: 0,
    waitingRetry: 0,
    dlq: 0,
    committed: 3,
    topics: { orders: { cursor: 4, firstOffset: 0 } },
  },
};

describe('checkAdminAnswer', () => {
  it('hands back the answer itself, fields a newer broker adds included', () => {
    const answer = { ...group, addedLater: true };
    const check = checkAdminAnswer(groupViewSchema, answer);
    expect(check).toEqual({ ok: true, value: answer });
    expect(check.ok && check.value).toBe(answer);
  });

  it('names the field that does not match, path by path', () => {
    const check = checkAdminAnswer(groupViewSchema, { ...group, stats: { ...group.stats, ready: '1' } });
    expect(check.ok).toBe(false);
    expect(!check.ok && check.problem).toMatch(/^stats\.ready: /);
  });

  it('names the answer itself when it is not an object', () => {
    const check = checkAdminAnswer(storeAnswerSchema, 'ok');
    expect(!check.ok && check.problem).toMatch(/^\(answer\): /);
  });
});
