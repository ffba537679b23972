import { ExponentialBackoff } from '@ricochet/core';
import { BrokerError, type RicochetError } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ClientError } from './client-error.js';
import type { ConnectionStatus } from './connection-status.js';
import { ReconnectLoop } from './reconnect-loop.js';

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/** 5, 10, 20, 40, 40 … ms without jitter; an attempt may take 2 s. */
const BACKOFF = { initialMs: 5, multiplier: 2, jitter: 0, maxMs: 40, minConnectTimeoutMs: 2_000 };

/** A loop whose attempts fail with `failures`, in order, then succeed. */
function loopWith(failures: readonly unknown[]) {
  const statuses: ConnectionStatus[] = [];
  const fatal: RicochetError[] = [];
  const attempts: { timeoutMs: number; atMs: number }[] = [];
  const lifetime = new AbortController();
  const backoff = new ExponentialBackoff(BACKOFF);
  const remaining = [...failures];
  const loop = new ReconnectLoop({
    backoff,
    signal: lifetime.signal,
    attempt: async (timeoutMs) => {
      attempts.push({ timeoutMs, atMs: Date.now() });
      if (remaining.length > 0) throw remaining.shift();
    },
    onStatus: (status) => statuses.push(status),
    onFatal: (error) => fatal.push(error),
  });
  return { loop, statuses, fatal, attempts, lifetime, backoff };
}

const unavailable = () => new BrokerError(503, 'starting');

describe('ReconnectLoop', () => {
  it('makes the first attempt of a first connect at once', async () => {
    const { loop, statuses, attempts } = loopWith([]);
    await loop.run(undefined);
    expect(statuses).toEqual([{ state: 'connecting' }]);
    expect(attempts).toEqual([{ timeoutMs: 2_000, atMs: expect.any(Number) }]);
  });

  it('waits the backoff before each further attempt, telling why the last one failed', async () => {
    const { loop, statuses, attempts } = loopWith([unavailable(), unavailable()]);
    const running = loop.run(undefined);
    await vi.advanceTimersByTimeAsync(5 + 10);
    await running;
    expect(statuses).toMatchObject([
      { state: 'connecting' },
      { state: 'reconnecting', attempt: 2, delayMs: 5, error: { code: 503 } },
      { state: 'reconnecting', attempt: 3, delayMs: 10, error: { code: 503 } },
    ]);
    const [first, second, third] = attempts.map((attempt) => attempt.atMs);
    expect([(second ?? 0) - (first ?? 0), (third ?? 0) - (second ?? 0)]).toEqual([5, 10]);
  });

  it('waits before the first attempt after a dropped session, and starts over after a success (C1)', async () => {
    const { loop, statuses } = loopWith([]);
    const dropped = new ClientError('CONNECTION_CLOSED', 'dropped');
    for (const _ of [1, 2]) {
      const running = loop.run(dropped);
      await vi.advanceTimersByTimeAsync(5);
      await running;
    }
    expect(statuses).toEqual([
      { state: 'reconnecting', attempt: 1, delayMs: 5, error: dropped },
      { state: 'reconnecting', attempt: 1, delayMs: 5, error: dropped },
    ]);
  });

  it('is single-flight: a run while one is running joins it', async () => {
    const { loop, attempts } = loopWith([unavailable()]);
    const first = loop.run(undefined);
    expect(loop.run(undefined)).toBe(first);
    await vi.advanceTimersByTimeAsync(5);
    await first;
    expect(attempts).toHaveLength(2);
    const next = loop.run(undefined);
    expect(next).not.toBe(first);
    await next;
  });

  it('ends with a non-retryable error, told to onFatal', async () => {
    const refused = new BrokerError(401, 'bad token');
    const { loop, fatal, attempts } = loopWith([unavailable(), refused, unavailable()]);
    const running = loop.run(undefined).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(5);
    expect(await running).toBe(refused);
    expect(fatal).toEqual([refused]);
    expect(attempts).toHaveLength(2);
  });

  it('turns a thrown non-Ricochet value into a retryable CONNECTION_CLOSED', async () => {
    const { loop, statuses } = loopWith([new Error('ECONNREFUSED')]);
    const running = loop.run(undefined);
    await vi.advanceTimersByTimeAsync(5);
    await running;
    expect(statuses[1]).toMatchObject({ state: 'reconnecting', error: { code: 'CONNECTION_CLOSED' } });
  });

  it('stops at once when its signal aborts, even in the middle of a wait', async () => {
    const { loop, attempts, lifetime } = loopWith([unavailable(), unavailable()]);
    const running = loop.run(undefined).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1);
    const closed = new ClientError('CLIENT_CLOSED', 'closed');
    lifetime.abort(closed);
    expect(await running).toBe(closed);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(attempts).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resets the backoff once an attempt succeeds', async () => {
    const { loop, backoff } = loopWith([unavailable()]);
    const reset = vi.spyOn(backoff, 'reset');
    const running = loop.run(undefined);
    await vi.advanceTimersByTimeAsync(5);
    await running;
    expect(reset).toHaveBeenCalledOnce();
    expect(backoff.nextDelayMs()).toBe(5);
  });
});
