import { FAST_BACKOFF, fakeBrokerPerTest, recordStatuses, rejectionOf } from '@ricochet/client-testkit';
import { BrokerError, PROTOCOL_VERSION, type SendFrame } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
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

describe('handshake', () => {
  it('offers ricochet.v1 on /v1/ws, says hello with token and clientId, and exposes the welcome', async () => {
    const fake = await brokers.start({ maxBodyBytes: 1234, maxFrameBytes: 5678 });
    const connection = connect(fake.endpoint, { token: 'tok', clientId: 'worker-1' });
    const recording = recordStatuses(connection);
    await connection.connect();
    expect(fake.sessions[0]?.hello).toEqual({
      type: 'hello',
      protocolVersion: PROTOCOL_VERSION,
      token: 'tok',
      clientId: 'worker-1',
      // What ws reads by default: the broker keeps its frames below it.
      maxFrameBytes: 100 * 1024 * 1024,
    });
    expect(connection.session).toEqual({
      endpoint: fake.endpoint,
      sessionId: 'session-1',
      protocolVersion: PROTOCOL_VERSION,
      maxBodyBytes: 1234,
      maxFrameBytes: 5678,
      // A broker that predates welcome.features granted nothing.
      features: [],
    });
    expect(connection.currentStatus).toEqual({
      state: 'connected',
      sessionId: 'session-1',
      endpoint: fake.endpoint,
    });
    await connection.close();
    await recording.ended;
    expect(recording.statuses.map((status) => status.state)).toEqual(['connecting', 'connected', 'closed']);
  });

  it('accepts a welcome with fields it does not know', async () => {
    const fake = await brokers.start({ welcomeExtra: { regionOfANewerBroker: 'eu-1' } });
    const connection = connect(fake.endpoint);
    await connection.connect();
    expect(connection.currentStatus.state).toBe('connected');
  });

  it('keeps a path prefix of the endpoint and tolerates a trailing slash', async () => {
    const fake = await brokers.start();
    const connection = connect(`${fake.endpoint}/`);
    await connection.connect();
    expect(connection.currentStatus.state).toBe('connected');
  });

  it('rejects an endpoint of no known scheme before any I/O', () => {
    expect(() => new Connection({ endpoint: 'ftp://127.0.0.1:1' })).toThrow(ClientError);
    expect(() => new Connection({ endpoint: 'not a url' })).toThrow(/not a URL/);
  });

  it('fails at once and closes on a 401 refusal: not retried', async () => {
    const fake = await brokers.start({ onHello: () => ({ code: 401, message: 'bad token' }) });
    const connection = connect(fake.endpoint, { token: 'wrong' });
    const error = await rejectionOf(connection.connect());
    expect(error).toBeInstanceOf(BrokerError);
    expect(error).toMatchObject({ code: 401, retryable: false, message: 'bad token' });
    expect(connection.currentStatus).toEqual({ state: 'closed', error });
    expect(fake.connectionCount).toBe(1);
    // The connection stays unusable, with the same reason.
    await expect(connection.request(send('a'))).rejects.toBe(error);
    await expect(connection.connect()).rejects.toBe(error);
  });

  it('retries a retryable refusal (503) with backoff until the broker accepts', async () => {
    let refusals = 2;
    const fake = await brokers.start({
      onHello: () => (refusals-- > 0 ? { code: 503, message: 'starting' } : undefined),
    });
    const connection = connect(fake.endpoint);
    const recording = recordStatuses(connection);
    await connection.connect();
    expect(fake.connectionCount).toBe(3);
    expect(recording.statuses).toMatchObject([
      { state: 'connecting' },
      { state: 'reconnecting', attempt: 2, delayMs: 5, error: { code: 503 } },
      { state: 'reconnecting', attempt: 3, delayMs: 10, error: { code: 503 } },
      { state: 'connected' },
    ]);
  });

  it('fails with PROTOCOL_ERROR when the server does not select ricochet.v1', async () => {
    const fake = await brokers.start();
    // A socket that offers no subprotocol, so the server selects none and `protocol` is ''.
    class NoSubprotocolWebSocket extends WebSocket {
      constructor(url: string) {
        super(url);
      }
    }
    const connection = connect(fake.endpoint, { webSocket: NoSubprotocolWebSocket });
    const error = await rejectionOf(connection.connect());
    expect(error).toMatchObject({ name: 'ClientError', code: 'PROTOCOL_ERROR', retryable: false });
    expect(connection.currentStatus.state).toBe('closed');
    expect(fake.sessions).toHaveLength(0);
  });

  it('works with a standard-style socket that delivers ArrayBuffers', async () => {
    const fake = await brokers.start();
    // Injected constructors get binaryType 'arraybuffer', as a browser's WebSocket would.
    const connection = connect(fake.endpoint, { webSocket: WebSocket });
    await connection.connect();
    const answer = await connection.request(send('0001'));
    expect(answer.receipts).toEqual([{ ok: true, messageId: '0001', offset: 0, duplicate: false }]);
  });

  it('bounds each attempt by attemptTimeoutMs() and retries after a silent broker', async () => {
    let silent = 1;
    // The first hello gets no answer: that attempt times out, the next one works.
    const fake = await brokers.start({ onHello: () => (silent-- > 0 ? 'ignore' : undefined) });
    const connection = connect(fake.endpoint, {
      reconnectBackoff: { ...FAST_BACKOFF, minConnectTimeoutMs: 200 },
    });
    const recording = recordStatuses(connection);
    await connection.connect();
    expect(recording.statuses).toMatchObject([
      { state: 'connecting' },
      { state: 'reconnecting', attempt: 2, error: { code: 'TIMEOUT' } },
      { state: 'connected' },
    ]);
    expect(fake.connectionCount).toBe(2);
  });
  it('asks for its features in hello and exposes what the broker granted in the session', async () => {
    const fake = await brokers.start({ welcomeExtra: { features: ['queueMap'] } });
    const connection = connect(fake.endpoint, { features: ['queueMap', 'notYetInvented'] });
    await connection.connect();
    expect(fake.sessions[0]?.hello.features).toEqual(['queueMap', 'notYetInvented']);
    expect(connection.session?.features).toEqual(['queueMap']);
    await connection.close();
  });
});
