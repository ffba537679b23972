import { type ProcessSpan, ReceivedMessage } from '@ricochet/client';
import { FakeBroker } from '@ricochet/client-testkit';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type ConsumeOutcome, ConsumeResult, type ConsumeResultValue } from './consume-result.js';
import { systemConsumptionClock } from './consumption-clock.js';
import {
  type ListenerContext,
  ListenerPool,
  type ListenerPoolOptions,
  type MessageListener,
} from './listener-pool.js';

interface Item {
  readonly message: ReceivedMessage;
  readonly live: boolean;
}

function item(
  id: string,
  fields: { messageGroup?: string; live?: boolean; deliveryAttempt?: number } = {},
): Item {
  const message = new ReceivedMessage(
    FakeBroker.deliveredMessage({
      messageId: id,
      deliveryAttempt: fields.deliveryAttempt ?? 1,
      ...(fields.messageGroup === undefined ? {} : { messageGroup: fields.messageGroup }),
    }),
  );
  return { message, live: fields.live ?? true };
}

/** A listener whose calls wait until the test settles them, by message id. */
function controlledListener() {
  const calls: { id: string; context: ListenerContext; settle: (result: ConsumeResultValue) => void }[] = [];
  let running = 0;
  let maxRunning = 0;
  const listener: MessageListener = (message, context) => {
    running += 1;
    maxRunning = Math.max(maxRunning, running);
    return new Promise<ConsumeResultValue>((resolve) => {
      calls.push({
        id: message.messageId,
        context,
        settle: (result) => {
          running -= 1;
          resolve(result);
        },
      });
    });
  };
  const settle = (id: string, result: ConsumeResultValue = ConsumeResult.SUCCESS): void => {
    const call = calls.find((candidate) => candidate.id === id);
    if (call === undefined) throw new Error(`${id} has not started`);
    call.settle(result);
  };
  return {
    listener,
    calls,
    settle,
    started: () => calls.map((call) => call.id),
    maxRunning: () => maxRunning,
  };
}

function createPool(overrides: Partial<ListenerPoolOptions<Item>> & { listener: MessageListener }) {
  const outcomes: [string, ConsumeOutcome][] = [];
  const listenerErrors: [unknown, string][] = [];
  const pool = new ListenerPool<Item>({
    concurrency: 2,
    consumptionTimeoutMs: 60_000,
    clock: systemConsumptionClock,
    isLive: (candidate) => candidate.live,
    isNonRetryable: () => false,
    onOutcome: (done, outcome) => outcomes.push([done.message.messageId, outcome]),
    onListenerError: (error, message) => listenerErrors.push([error, message.messageId]),
    ...overrides,
  });
  return { pool, outcomes, listenerErrors };
}

/** Let settled listener promises run their continuations. */
const flushMicrotasks = () => new Promise<void>((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe('ListenerPool', () => {
  it('runs at most `concurrency` listeners at once, in arrival order', async () => {
    const control = controlledListener();
    const { pool, outcomes } = createPool({ listener: control.listener, concurrency: 2 });
    pool.add(['a', 'b', 'c', 'd', 'e'].map((id) => item(id)));
    expect(control.started()).toEqual(['a', 'b']);
    expect(pool.runningCount).toBe(2);
    expect(pool.cachedCount).toBe(3);
    control.settle('b');
    await flushMicrotasks();
    expect(control.started()).toEqual(['a', 'b', 'c']);
    for (const id of ['a', 'c', 'd', 'e']) {
      await vi.waitFor(() => expect(control.started()).toContain(id));
      control.settle(id);
      await flushMicrotasks();
    }
    expect(outcomes.map(([id]) => id)).toEqual(['b', 'a', 'c', 'd', 'e']);
    expect(control.maxRunning()).toBe(2);
    await pool.whenIdle();
  });

  it('turns results, throws and synchronous listeners into outcomes, without recursion', () => {
    const results: Record<string, () => ConsumeResultValue> = {
      ok: () => ConsumeResult.SUCCESS,
      bad: () => ConsumeResult.FAILURE,
      later: () => ConsumeResult.retryAfter(250),
      boom: () => {
        throw new Error('boom');
      },
    };
    const { pool, outcomes, listenerErrors } = createPool({
      listener: (message) => {
        const result = results[message.messageId];
        return result === undefined ? ConsumeResult.SUCCESS : result();
      },
      concurrency: 1,
    });
    // Thousands of synchronous listeners in one add: each finishes inside the pump's loop.
    pool.add(Array.from({ length: 5_000 }, (_, index) => item(`m${index}`)));
    pool.add(['ok', 'bad', 'later', 'boom'].map((id) => item(id)));
    expect(outcomes).toHaveLength(5_004);
    expect(outcomes.slice(-4)).toEqual([
      ['ok', { type: 'ack' }],
      ['bad', { type: 'nack', reason: 'the listener returned FAILURE' }],
      ['later', { type: 'nack', reason: 'the listener asked for a retry after 250 ms', retryAfterMs: 250 }],
      ['boom', { type: 'nack', reason: 'boom' }],
    ]);
    expect(listenerErrors).toEqual([[new Error('boom'), 'boom']]);
  });

  it('reports a rejection and a non-result as failures, through onListenerError too', async () => {
    const { pool, outcomes, listenerErrors } = createPool({
      listener: async (message) => {
        if (message.messageId === 'rejects') throw new RangeError('out of stock');
        return undefined as unknown as ConsumeResultValue;
      },
    });
    pool.add([item('rejects'), item('forgot-return')]);
    await pool.whenIdle();
    expect(outcomes).toEqual([
      ['rejects', { type: 'nack', reason: 'out of stock' }],
      ['forgot-return', { type: 'nack', reason: 'the listener returned undefined, not a ConsumeResult' }],
    ]);
    expect(listenerErrors.map(([error, id]) => [(error as Error).message, id])).toEqual([
      ['out of stock', 'rejects'],
      ['the listener returned undefined, not a ConsumeResult', 'forgot-return'],
    ]);
  });

  it('processes one message group at a time, in order, while other groups and plain messages flow', async () => {
    const control = controlledListener();
    const { pool, outcomes } = createPool({ listener: control.listener, concurrency: 10 });
    pool.add([
      item('g1-1', { messageGroup: 'g1' }),
      item('g2-1', { messageGroup: 'g2' }),
      item('g1-2', { messageGroup: 'g1' }),
      item('plain-1'),
      item('g1-3', { messageGroup: 'g1' }),
      item('g2-2', { messageGroup: 'g2' }),
    ]);
    expect(control.started()).toEqual(['g1-1', 'g2-1', 'plain-1']);
    control.settle('g1-1', ConsumeResult.FAILURE);
    await flushMicrotasks();
    expect(control.started()).toEqual(['g1-1', 'g2-1', 'plain-1', 'g1-2']);
    control.settle('g2-1');
    control.settle('g1-2');
    await flushMicrotasks();
    expect(control.started()).toEqual(['g1-1', 'g2-1', 'plain-1', 'g1-2', 'g2-2', 'g1-3']);
    control.settle('g1-3');
    control.settle('g2-2');
    control.settle('plain-1');
    await pool.whenIdle();
    const order = (group: string) => outcomes.map(([id]) => id).filter((id) => id.startsWith(group));
    expect(order('g1')).toEqual(['g1-1', 'g1-2', 'g1-3']);
    expect(order('g2')).toEqual(['g2-1', 'g2-2']);
  });

  it('starts a redelivery before the first deliveries already waiting in the cache', async () => {
    const control = controlledListener();
    const { pool } = createPool({ listener: control.listener, concurrency: 1 });
    pool.add(['a', 'b', 'c'].map((id) => item(id)));
    pool.add([item('retry', { deliveryAttempt: 2 }), item('d')]);
    for (const id of ['a', 'retry', 'b', 'c', 'd']) {
      await vi.waitFor(() => expect(control.started()).toContain(id));
      control.settle(id);
    }
    await pool.whenIdle();
    expect(control.started()).toEqual(['a', 'retry', 'b', 'c', 'd']);
  });

  it("queues a redelivery behind its message group's earlier messages, then ahead of first deliveries (P5)", async () => {
    const control = controlledListener();
    const { pool } = createPool({ listener: control.listener, concurrency: 1 });
    pool.add([
      item('x0'),
      item('g-1', { messageGroup: 'g' }),
      item('g-retry', { messageGroup: 'g', deliveryAttempt: 3 }),
      item('x1'),
    ]);
    for (const id of ['x0', 'g-1', 'g-retry', 'x1']) {
      await vi.waitFor(() => expect(control.started()).toContain(id));
      control.settle(id);
    }
    await pool.whenIdle();
    // g-retry waits for g-1 (its group's earlier message), then goes before x1, which came first.
    expect(control.started()).toEqual(['x0', 'g-1', 'g-retry', 'x1']);
  });

  it('reports running out of work: a listener free and nothing startable, message group backlogs aside', async () => {
    const control = controlledListener();
    const onStarved = vi.fn();
    const { pool } = createPool({ listener: control.listener, concurrency: 2, onStarved });
    pool.add([item('a'), item('b'), item('c')]);
    expect(pool.startableCount).toBe(1);
    expect(onStarved).not.toHaveBeenCalled();
    control.settle('a');
    await flushMicrotasks();
    // c took a's place: both listeners busy, nothing waiting.
    expect(onStarved).not.toHaveBeenCalled();
    control.settle('b');
    await flushMicrotasks();
    expect(onStarved).toHaveBeenCalledTimes(1);
    control.settle('c');
    await flushMicrotasks();
    expect(onStarved).toHaveBeenCalledTimes(2);
    // g-2 waits for its group, not for a listener: a listener is free, with nothing to start.
    pool.add([item('g-1', { messageGroup: 'g' }), item('g-2', { messageGroup: 'g' })]);
    expect(pool.startableCount).toBe(0);
    expect(pool.cachedCount).toBe(1);
    expect(onStarved).toHaveBeenCalledTimes(3);
    control.settle('g-1');
    await vi.waitFor(() => expect(control.started()).toContain('g-2'));
    control.settle('g-2');
    await pool.whenIdle();
  });

  it('fails a listener at its consumption timeout but keeps its slot and group until it ends', async () => {
    vi.useFakeTimers();
    const control = controlledListener();
    const { pool, outcomes, listenerErrors } = createPool({
      listener: control.listener,
      concurrency: 1,
      consumptionTimeoutMs: 15 * 60_000,
    });
    pool.add([item('slow', { messageGroup: 'g' }), item('next', { messageGroup: 'g' })]);
    const [slow] = control.calls;
    await vi.advanceTimersByTimeAsync(15 * 60_000 - 1);
    expect(outcomes).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(outcomes).toEqual([['slow', { type: 'nack', reason: 'consumption timeout' }]]);
    expect(listenerErrors).toEqual([[expect.objectContaining({ code: 'TIMEOUT' }), 'slow']]);
    expect(slow?.context.signal.aborted).toBe(true);
    expect(slow?.context.signal.reason).toMatchObject({ code: 'TIMEOUT' });
    // Still running: nothing else starts, not even the next message of another group.
    expect(control.started()).toEqual(['slow']);
    expect(pool.runningCount).toBe(1);
    control.settle('slow', ConsumeResult.SUCCESS);
    await vi.advanceTimersByTimeAsync(0);
    // The late SUCCESS is ignored: the delivery has already failed.
    expect(outcomes).toHaveLength(1);
    expect(control.started()).toEqual(['slow', 'next']);
  });

  it('times the consumption timeout on the clock it is given, and no other', () => {
    // A clock that moves only when told, as @ricochet/testing's virtual clock does.
    let nowMs = 0;
    const timers: { dueAtMs: number; callback: () => void }[] = [];
    const clock = {
      now: () => nowMs,
      setTimer: (delayMs: number, callback: () => void) => {
        const timer = { dueAtMs: nowMs + delayMs, callback };
        timers.push(timer);
        return { cancel: () => timers.splice(timers.indexOf(timer), 1) };
      },
    };
    const control = controlledListener();
    const { pool, outcomes } = createPool({
      listener: control.listener,
      consumptionTimeoutMs: 60_000,
      clock,
    });
    pool.add([item('slow')]);
    expect(timers.map((timer) => timer.dueAtMs)).toEqual([60_000]);
    nowMs = 60_000;
    for (const timer of timers.splice(0)) timer.callback();
    expect(outcomes).toEqual([['slow', { type: 'nack', reason: 'consumption timeout' }]]);
  });

  it('drops items that are no longer live without an outcome, and moves their group on', async () => {
    const { pool, outcomes } = createPool({ listener: () => ConsumeResult.SUCCESS });
    pool.add([item('dead', { messageGroup: 'g', live: false }), item('alive', { messageGroup: 'g' })]);
    await pool.whenIdle();
    expect(outcomes).toEqual([['alive', { type: 'ack' }]]);
  });

  it('takes cached items out, keeping the order and group places of the rest', async () => {
    const control = controlledListener();
    const { pool } = createPool({ listener: control.listener, concurrency: 1 });
    pool.add([
      item('running', { messageGroup: 'g' }),
      item('drop-1'),
      item('g-2', { messageGroup: 'g' }),
      item('keep-1'),
      item('drop-2', { messageGroup: 'h' }),
      item('h-2', { messageGroup: 'h' }),
    ]);
    const taken = pool.takeCached((candidate) => candidate.message.messageId.startsWith('drop'));
    expect(taken.map((candidate) => candidate.message.messageId)).toEqual(['drop-1', 'drop-2']);
    expect(pool.cachedCount).toBe(3);
    for (const id of ['running', 'keep-1', 'h-2', 'g-2']) {
      await vi.waitFor(() => expect(control.started()).toContain(id));
      control.settle(id);
    }
    await pool.whenIdle();
    // `g-2` waited for `running` (same group); `h-2` took over group h from the dropped head.
    expect(control.started()).toEqual(['running', 'keep-1', 'h-2', 'g-2']);
  });

  it('starts nothing after stop(); the cache can still be taken', async () => {
    const control = controlledListener();
    const { pool, outcomes } = createPool({ listener: control.listener, concurrency: 1 });
    pool.add([item('a'), item('b')]);
    pool.stop();
    control.settle('a');
    await pool.whenIdle();
    expect(control.started()).toEqual(['a']);
    expect(outcomes).toEqual([['a', { type: 'ack' }]]);
    expect(pool.takeCached().map((candidate) => candidate.message.messageId)).toEqual(['b']);
  });

  it('abandonRunning() stops waiting: signals abort, idle waiters wake, late results are ignored', async () => {
    const control = controlledListener();
    const { pool, outcomes } = createPool({ listener: control.listener });
    pool.add([item('hung')]);
    const idle = pool.whenIdle();
    const reason = new Error('closing');
    pool.abandonRunning(reason);
    await idle;
    expect(pool.runningCount).toBe(0);
    expect(control.calls[0]?.context.signal.reason).toBe(reason);
    control.settle('hung');
    await flushMicrotasks();
    expect(outcomes).toEqual([]);
  });

  it('ends each run’s span once, with the outcome that went out, and runs the listener inside it', async () => {
    const ends: [string, ...unknown[]][] = [];
    const inside: string[] = [];
    const spanOf = (message: ReceivedMessage): ProcessSpan => ({
      run: (work) => {
        inside.push(message.messageId);
        return work();
      },
      event: () => {},
      end: (...args) => ends.push([message.messageId, ...args]),
    });
    let nowMs = 0;
    const timers: (() => void)[] = [];
    const clock = {
      now: () => nowMs,
      setTimer: (_delayMs: number, fire: () => void) => {
        timers.push(fire);
        return { cancel() {} };
      },
    };
    const control = controlledListener();
    const { pool } = createPool({ listener: control.listener, concurrency: 5, clock, startSpan: spanOf });
    pool.add(['ok', 'later', 'fail', 'slow', 'hung'].map((id) => item(id)));
    control.settle('ok');
    control.settle('later', ConsumeResult.retryAfter(5));
    control.settle('fail', ConsumeResult.deadLetter('poison'));
    await flushMicrotasks();
    nowMs = 60_000;
    for (const fire of timers.splice(0)) fire();
    control.settle('slow');
    pool.add([item('closing')]);
    pool.abandonRunning(new Error('closing'));
    await flushMicrotasks();
    expect(inside).toEqual(['ok', 'later', 'fail', 'slow', 'hung', 'closing']);
    expect(ends).toEqual([
      ['ok', 'success'],
      ['later', 'retry_after', 'retry_after', 'the listener asked for a retry after 5 ms'],
      ['fail', 'dead_lettered', 'dead_lettered', 'poison'],
      ['slow', 'failure', 'consumption_timeout', 'consumption timeout'],
      ['hung', 'failure', 'consumption_timeout', 'consumption timeout'],
      ['closing', 'failure', 'consumer_closed'],
    ]);
  });
});
