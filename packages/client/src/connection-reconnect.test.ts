import {
  FAST_BACKOFF,
  fakeBrokerPerTest,
  nextStatus,
  recordStatuses,
  rejectionOf,
} from '@ricochet/client-testkit';
import { ExponentialBackoff } from '@ricochet/core';
import type { SendFrame } from '@ricochet/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ClientError } from './client-error.js';
import { Connection } from './connection.js';
import type { ConnectionOptions } from './connection-options.js';

const brokers = fakeBrokerPerTest((connection: Connection) => connection.close({ drainTimeoutMs: 0 }));

function connect(endpoint: string, options: Partial<ConnectionOptions> = {}): Connection {
  return brokers.track(
    new Connection({ endpoint, reconnectBackoff: FAST_BACKOFF, onProtocolError: () => {}, ...options }),
  );
}

function send(messageId: string): Omit<SendFrame, 'id'> {
  return { type: 'send', messages: [{ messageId, topic: 'orders', body: new Uint8Array([1]), bornAt: 1 }] };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('reconnect (C1)', () => {
  it('fails in-flight requests with CONNECTION_CLOSED, reconnects, and runs the reconnect hooks', async () => {
    const fake = await brokers.start();
    fake.on('send', (_, session) => session.drop());
    const connection = connect(fake.endpoint);
    await connection.connect();
    const recording = recordStatuses(connection);
    const hook = vi.fn();
    connection.onReconnected(hook);
    const reconnected = nextStatus(connection, (status) => status.state === 'connected');
    const error = await rejectionOf(connection.request(send('a')));
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ code: 'CONNECTION_CLOSED', retryable: true });
    await reconnected;
    expect(hook).toHaveBeenCalledOnce();
    expect(fake.sessions).toHaveLength(2);
    expect(recording.statuses).toMatchObject([
      { state: 'disconnected', error: { code: 'CONNECTION_CLOSED' } },
      { state: 'reconnecting', attempt: 1, delayMs: 5, error: { code: 'CONNECTION_CLOSED' } },
      { state: 'connected', sessionId: 'session-2' },
    ]);
  });

  it('waits a backoff window before every reconnect, so a flapping broker is no tight loop', async () => {
    const fake = await brokers.start();
    const connection = connect(fake.endpoint);
    await connection.connect();
    const recording = recordStatuses(connection);
    const fourth = nextStatus(
      connection,
      (status) => status.state === 'connected' && status.sessionId === 'session-4',
    );
    for (const sessionNumber of [1, 2, 3]) {
      const session = await fake.waitForSession(sessionNumber);
      session.drop();
    }
    await fourth;
    const waits = recording.statuses.filter((status) => status.state === 'reconnecting');
    // The backoff resets after each handshake, so every reconnect waits the initial window.
    expect(waits).toMatchObject([
      { attempt: 1, delayMs: 5 },
      { attempt: 1, delayMs: 5 },
      { attempt: 1, delayMs: 5 },
    ]);
  });

  it('queues requests made while reconnecting and sends them on the new session', async () => {
    const fake = await brokers.start();
    const connection = connect(fake.endpoint);
    await connection.connect();
    const disconnected = nextStatus(connection, (status) => status.state === 'disconnected');
    fake.dropAll();
    await disconnected;
    const answer = connection.request(send('queued'));
    await expect(answer).resolves.toMatchObject({ receipts: [{ messageId: 'queued' }] });
    expect(fake.sessions).toHaveLength(2);
  });

  it('times out a queued request that never gets a session', async () => {
    const fake = await brokers.start({ onHello: () => ({ code: 503, message: 'starting' }) });
    const connection = connect(fake.endpoint);
    void connection.connect().catch(() => {});
    const error = await rejectionOf(connection.request(send('a'), { timeoutMs: 30 }));
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true });
  });

  it('waits the backoff windows of ExponentialBackoff between attempts and resets after success', async () => {
    const nextDelays = vi.spyOn(ExponentialBackoff.prototype, 'nextDelayMs');
    const reset = vi.spyOn(ExponentialBackoff.prototype, 'reset');
    let refusals = 3;
    const fake = await brokers.start({
      onHello: () => (refusals-- > 0 ? { code: 503, message: 'starting' } : undefined),
    });
    // Jitter from an injected random: 1 always means +jitter.
    const connection = connect(fake.endpoint, {
      reconnectBackoff: { ...FAST_BACKOFF, jitter: 0.5, random: () => 1 },
    });
    const recording = recordStatuses(connection);
    const startedAt = performance.now();
    await connection.connect();
    const elapsedMs = performance.now() - startedAt;
    const delays = recording.statuses.flatMap((status) =>
      status.state === 'reconnecting' ? [status.delayMs] : [],
    );
    // 5 (the first window has no jitter), then 10 + 50 %, then 20 + 50 %.
    expect(delays).toEqual([5, 15, 30]);
    expect(nextDelays.mock.results.map((result) => result.value)).toEqual(delays);
    expect(elapsedMs).toBeGreaterThanOrEqual(5 + 15 + 30 - 3);
    expect(reset).toHaveBeenCalledOnce();
  });

  it('is single-flight: concurrent connects share one attempt loop', async () => {
    const fake = await brokers.start();
    const connection = connect(fake.endpoint);
    await Promise.all([connection.connect(), connection.connect(), connection.connect()]);
    expect(fake.connectionCount).toBe(1);
    const reconnected = nextStatus(connection, (status) => status.state === 'connected');
    const disconnected = nextStatus(connection, (status) => status.state === 'disconnected');
    fake.dropAll();
    await disconnected;
    // connect() during a reconnect joins the running loop instead of starting another.
    await Promise.all([connection.connect(), connection.connect(), reconnected]);
    expect(fake.connectionCount).toBe(2);
  });

  it('reconnects with a 401 refusal as a final close, failing queued requests with it', async () => {
    let accept = true;
    const fake = await brokers.start({
      onHello: () => (accept ? undefined : { code: 401, message: 'revoked' }),
    });
    const connection = connect(fake.endpoint);
    await connection.connect();
    accept = false;
    const disconnected = nextStatus(connection, (status) => status.state === 'disconnected');
    fake.dropAll();
    await disconnected;
    const queued = connection.request(send('a'));
    const error = await rejectionOf(queued);
    expect(error).toMatchObject({ code: 401 });
    expect(connection.currentStatus).toEqual({ state: 'closed', error });
  });

  it('reports a rejected reconnect hook without stopping the others', async () => {
    const fake = await brokers.start();
    const onHandlerError = vi.fn();
    const connection = connect(fake.endpoint, { onHandlerError });
    await connection.connect();
    const second = vi.fn();
    connection.onReconnected(() => Promise.reject(new Error('resubscribe failed')));
    const removed = vi.fn();
    const remove = connection.onReconnected(removed);
    connection.onReconnected(second);
    remove();
    const reconnected = nextStatus(connection, (status) => status.state === 'connected');
    fake.dropAll();
    await reconnected;
    await vi.waitFor(() => expect(onHandlerError).toHaveBeenCalledWith(new Error('resubscribe failed')));
    expect(second).toHaveBeenCalledOnce();
    expect(removed).not.toHaveBeenCalled();
  });
});
