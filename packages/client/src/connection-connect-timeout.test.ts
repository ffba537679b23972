import { createServer } from 'node:net';
import { FAST_BACKOFF, fakeBrokerPerTest, nextStatus, rejectionOf } from '@ricochet/client-testkit';
import { describe, expect, it } from 'vitest';
import { Connection } from './connection.js';
import type { ConnectionOptions } from './connection-options.js';

const brokers = fakeBrokerPerTest((connection: Connection) => connection.close({ drainTimeoutMs: 0 }));

function connect(endpoint: string | readonly string[], options: Partial<ConnectionOptions> = {}): Connection {
  return brokers.track(
    new Connection({ endpoint, reconnectBackoff: FAST_BACKOFF, onProtocolError: () => {}, ...options }),
  );
}

/** A port nothing listens on: bound on 127.0.0.1, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('the first connect', () => {
  it('fails with CONNECT_TIMEOUT naming the endpoint after connectTimeoutMs, and closes the connection', async () => {
    const endpoint = `ws://127.0.0.1:${await closedPort()}`;
    // Long enough for an attempt to fail first on a loaded machine (a closed port refuses at once).
    const connection = connect(endpoint, { connectTimeoutMs: 1_000 });
    const error = await rejectionOf(connection.connect());
    expect(error).toMatchObject({ name: 'ClientError', code: 'CONNECT_TIMEOUT', retryable: true });
    expect(error.message).toContain(`could not connect to ${endpoint} within 1000 ms`);
    // Why the attempts failed, in the runtime's words.
    expect(error.message).toMatch(/ECONNREFUSED|refused|closed/i);
    expect(error.message).toContain('connectTimeoutMs');
    expect(connection.currentStatus).toEqual({ state: 'closed', error });
    // Closed for good: a later connect or request fails at once with the same error.
    expect(await rejectionOf(connection.connect())).toBe(error);
    const messages = [{ messageId: 'm', topic: 't', body: new Uint8Array([1]), bornAt: 1 }];
    expect(await rejectionOf(connection.request({ type: 'send', messages }))).toBe(error);
  });

  it('names every endpoint of a list, and bounds the whole rotation, not each attempt', async () => {
    const endpoints = [`ws://127.0.0.1:${await closedPort()}`, `tcp://127.0.0.1:${await closedPort()}`];
    const connection = connect(endpoints, { connectTimeoutMs: 200 });
    const error = await rejectionOf(connection.connect());
    expect(error).toMatchObject({ code: 'CONNECT_TIMEOUT' });
    expect(error.message).toContain(`could not connect to any of ${endpoints.join(', ')} within 200 ms`);
  });

  it('shares one time limit between concurrent calls', async () => {
    const connection = connect(`ws://127.0.0.1:${await closedPort()}`, { connectTimeoutMs: 200 });
    const [first, second] = await Promise.all([
      rejectionOf(connection.connect()),
      rejectionOf(connection.connect()),
    ]);
    expect(second).toBe(first);
  });

  it('waits for ever with Infinity, until close()', async () => {
    const connection = connect(`ws://127.0.0.1:${await closedPort()}`, {
      connectTimeoutMs: Number.POSITIVE_INFINITY,
    });
    const connecting = rejectionOf(connection.connect());
    // Several failed attempts, then closed by its owner: CLIENT_CLOSED, not CONNECT_TIMEOUT.
    await nextStatus(connection, (status) => status.state === 'reconnecting' && status.attempt >= 3);
    await connection.close();
    expect(await connecting).toMatchObject({ code: 'CLIENT_CLOSED' });
  });

  it('refuses a connectTimeoutMs that is not a positive number', () => {
    for (const connectTimeoutMs of [0, -1, Number.NaN]) {
      expect(() => new Connection({ endpoint: 'ws://127.0.0.1:1', connectTimeoutMs })).toThrow(
        expect.objectContaining({ code: 400, message: expect.stringContaining('connectTimeoutMs') }),
      );
    }
  });
});

describe('reconnects after a first session', () => {
  it('keep C1 backoff past connectTimeoutMs: a broker refusing for longer is waited for', async () => {
    let refusing = false;
    const fake = await brokers.start({
      onHello: () => (refusing ? { code: 503, message: 'starting' } : undefined),
    });
    const connectTimeoutMs = 300;
    const connection = connect(fake.endpoint, {
      connectTimeoutMs,
      reconnectBackoff: { ...FAST_BACKOFF, initialMs: 20, maxMs: 100 },
    });
    await connection.connect();
    refusing = true;
    const droppedAtMs = performance.now();
    fake.dropAll();
    // Refused for twice connectTimeoutMs at least (time measured, not assumed from the backoff).
    for (let attempts = 0; performance.now() - droppedAtMs < 2 * connectTimeoutMs; attempts++) {
      expect(attempts).toBeLessThan(1_000);
      await nextStatus(connection, (status) => status.state === 'reconnecting');
    }
    refusing = false;
    await nextStatus(connection, (status) => status.state === 'connected');
    // A connect() while connected, and after the reconnect, is not bounded either.
    await connection.connect();
    expect(connection.currentStatus.state).toBe('connected');
  });
});
