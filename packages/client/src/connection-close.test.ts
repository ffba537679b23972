import {
  FAST_BACKOFF,
  fakeBrokerPerTest,
  nextStatus,
  recordStatuses,
  rejectionOf,
} from '@ricochet/client-testkit';
import type { SendFrame } from '@ricochet/protocol';
import { describe, expect, it, vi } from 'vitest';
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

describe('close', () => {
  it('stops a reconnect loop at once, in the middle of a long backoff wait', async () => {
    const fake = await brokers.start({ onHello: () => ({ code: 503, message: 'starting' }) });
    const connection = connect(fake.endpoint, {
      reconnectBackoff: { initialMs: 60_000, maxMs: 60_000, jitter: 0 },
    });
    const connecting = rejectionOf(connection.connect());
    const waiting = await nextStatus(connection, (status) => status.state === 'reconnecting');
    expect(waiting).toMatchObject({ attempt: 2, delayMs: 60_000 });
    const startedAt = performance.now();
    await connection.close();
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    const error = await connecting;
    expect(error).toMatchObject({ code: 'CLIENT_CLOSED', retryable: false });
    expect(connection.currentStatus).toEqual({ state: 'closed' });
    expect(fake.connectionCount).toBe(1);
  });

  it('stops a connect attempt in progress', async () => {
    const fake = await brokers.start({ onHello: () => 'ignore' });
    const connection = connect(fake.endpoint, { reconnectBackoff: { minConnectTimeoutMs: 60_000 } });
    const connecting = rejectionOf(connection.connect());
    await vi.waitFor(() => expect(fake.connectionCount).toBe(1));
    await connection.close();
    expect(await connecting).toMatchObject({ code: 'CLIENT_CLOSED' });
    expect(fake.connectionCount).toBe(1);
  });

  it('lets in-flight requests finish, then closes with code 1000', async () => {
    const fake = await brokers.start();
    const answers: Array<() => void> = [];
    fake.on('send', (frame, session) => {
      answers.push(() => session.send({ type: 'sendResult', id: frame.id, receipts: [] }));
    });
    const connection = connect(fake.endpoint);
    await connection.connect();
    const inflight = connection.request(send('a'));
    await fake.waitForFrames('send');
    const closing = connection.close();
    // New requests are refused while draining.
    await expect(connection.request(send('b'))).rejects.toMatchObject({ code: 'CLIENT_CLOSED' });
    for (const answer of answers) answer();
    await expect(inflight).resolves.toMatchObject({ type: 'sendResult' });
    await closing;
    expect(connection.currentStatus).toEqual({ state: 'closed' });
    await expect(fake.sessions[0]?.closed).resolves.toEqual({ code: 1000, reason: 'client closed' });
  });

  it('fails what is still in flight after drainTimeoutMs with CLIENT_CLOSED', async () => {
    const fake = await brokers.start();
    fake.on('send', () => {});
    const connection = connect(fake.endpoint);
    await connection.connect();
    const inflight = rejectionOf(connection.request(send('a')));
    await fake.waitForFrames('send');
    await connection.close({ drainTimeoutMs: 20 });
    expect(await inflight).toMatchObject({ code: 'CLIENT_CLOSED', retryable: false });
  });

  it('fails queued requests at once and is idempotent', async () => {
    const fake = await brokers.start({ onHello: () => ({ code: 503, message: 'starting' }) });
    const connection = connect(fake.endpoint);
    void connection.connect().catch(() => {});
    const queued = connection.request(send('a'));
    const first = connection.close();
    expect(connection.close()).toBe(first);
    await expect(queued).rejects.toMatchObject({ code: 'CLIENT_CLOSED' });
    await first;
  });

  it('does not reconnect after close and ends every status iterator', async () => {
    const fake = await brokers.start();
    const connection = connect(fake.endpoint);
    await connection.connect();
    const recording = recordStatuses(connection);
    await connection.close();
    await recording.ended;
    expect(recording.statuses).toEqual([{ state: 'closed' }]);
    expect(fake.sessions).toHaveLength(1);
    // A feed opened after the end ends at once.
    const late = [];
    for await (const status of connection.status()) late.push(status);
    expect(late).toEqual([]);
  });

  it('closes through await using', async () => {
    const fake = await brokers.start();
    let observed: Connection | undefined;
    {
      await using connection = new Connection({ endpoint: fake.endpoint, reconnectBackoff: FAST_BACKOFF });
      await connection.connect();
      observed = connection;
    }
    expect(observed.currentStatus.state).toBe('closed');
  });
});
