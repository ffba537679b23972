import { FAST_BACKOFF, FakeBroker, nextStatus, recordStatuses, rejectionOf } from '@ricochet/client-testkit';
import { ExponentialBackoff } from '@ricochet/core';
import { BrokerError, encodeFrame, PROTOCOL_VERSION, type SendFrame } from '@ricochet/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { ClientError } from './client-error.js';
import { Connection, type ConnectionOptions } from './connection.js';

let broker: FakeBroker | undefined;
const connections: Connection[] = [];

afterEach(async () => {
  await Promise.all(connections.splice(0).map((connection) => connection.close({ drainTimeoutMs: 0 })));
  await broker?.close();
  broker = undefined;
  vi.restoreAllMocks();
});

async function startBroker(options: Parameters<typeof FakeBroker.start>[0] = {}): Promise<FakeBroker> {
  broker = await FakeBroker.start(options);
  return broker;
}

function connect(endpoint: string, options: Partial<ConnectionOptions> = {}): Connection {
  const connection = new Connection({
    endpoint,
    reconnectBackoff: FAST_BACKOFF,
    onProtocolError: () => {},
    ...options,
  });
  connections.push(connection);
  return connection;
}

function send(messageId: string): Omit<SendFrame, 'id'> {
  return { type: 'send', messages: [{ messageId, topic: 'orders', body: new Uint8Array([1]), bornAt: 1 }] };
}

describe('handshake', () => {
  it('offers ricochet.v1 on /v1/ws, says hello with token and clientId, and exposes the welcome', async () => {
    const fake = await startBroker({ maxBodyBytes: 1234, maxFrameBytes: 5678 });
    const connection = connect(fake.endpoint, { token: 'tok', clientId: 'worker-1' });
    const recording = recordStatuses(connection);
    await connection.connect();
    expect(fake.sessions[0]?.hello).toEqual({
      type: 'hello',
      protocolVersion: PROTOCOL_VERSION,
      token: 'tok',
      clientId: 'worker-1',
    });
    expect(connection.session).toEqual({
      sessionId: 'session-1',
      protocolVersion: PROTOCOL_VERSION,
      maxBodyBytes: 1234,
      maxFrameBytes: 5678,
    });
    expect(connection.currentStatus).toEqual({ state: 'connected', sessionId: 'session-1' });
    await connection.close();
    await recording.ended;
    expect(recording.statuses.map((status) => status.state)).toEqual(['connecting', 'connected', 'closed']);
  });

  it('accepts a welcome with fields it does not know', async () => {
    const fake = await startBroker({ welcomeExtra: { regionOfANewerBroker: 'eu-1' } });
    const connection = connect(fake.endpoint);
    await connection.connect();
    expect(connection.currentStatus.state).toBe('connected');
  });

  it('keeps a path prefix of the endpoint and tolerates a trailing slash', async () => {
    const fake = await startBroker();
    const connection = connect(`${fake.endpoint}/`);
    await connection.connect();
    expect(connection.currentStatus.state).toBe('connected');
  });

  it('rejects an endpoint that is not ws:// or wss:// before any I/O', () => {
    expect(() => new Connection({ endpoint: 'http://127.0.0.1:1' })).toThrow(ClientError);
    expect(() => new Connection({ endpoint: 'not a url' })).toThrow(/not a URL/);
  });

  it('fails at once and closes on a 401 refusal: not retried', async () => {
    const fake = await startBroker({ onHello: () => ({ code: 401, message: 'bad token' }) });
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
    const fake = await startBroker({
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
    const fake = await startBroker();
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
    const fake = await startBroker();
    // Injected constructors get binaryType 'arraybuffer', as a browser's WebSocket would.
    const connection = connect(fake.endpoint, { webSocket: WebSocket });
    await connection.connect();
    const answer = await connection.request(send('0001'));
    expect(answer.receipts).toEqual([{ ok: true, messageId: '0001', offset: 0, duplicate: false }]);
  });

  it('bounds each attempt by attemptTimeoutMs() and retries after a silent broker', async () => {
    let silent = 1;
    // The first hello gets no answer: that attempt times out, the next one works.
    const fake = await startBroker({ onHello: () => (silent-- > 0 ? 'ignore' : undefined) });
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
});

describe('requests', () => {
  it('correlates answers by id, whatever their order', async () => {
    const fake = await startBroker();
    const held: Array<() => void> = [];
    fake.on('send', (frame, session) => {
      held.push(() =>
        session.send({
          type: 'sendResult',
          id: frame.id,
          receipts: frame.messages.map((m) => fake.store(m.messageId)),
        }),
      );
      // Answer in reverse order once both are in.
      if (held.length === 2) for (const answer of held.reverse()) answer();
    });
    const connection = connect(fake.endpoint);
    await connection.connect();
    const [first, second] = await Promise.all([
      connection.request(send('first')),
      connection.request(send('second')),
    ]);
    expect(first.receipts[0]?.messageId).toBe('first');
    expect(second.receipts[0]?.messageId).toBe('second');
    const ids = fake.framesOf('send').map((frame) => frame.id);
    expect(new Set(ids).size).toBe(2);
  });

  it('rejects with a BrokerError carrying the code and details of an error answer', async () => {
    const fake = await startBroker();
    fake.on('send', (frame, session) =>
      session.send({
        type: 'error',
        id: frame.id,
        code: 404,
        message: 'topic invoices does not exist',
        details: { topic: 'invoices' },
      }),
    );
    const connection = connect(fake.endpoint);
    await connection.connect();
    const error = await rejectionOf(connection.request(send('a')));
    expect(error).toBeInstanceOf(BrokerError);
    expect(error).toMatchObject({ code: 404, retryable: false, details: { topic: 'invoices' } });
  });

  it('times out with a retryable TIMEOUT and ignores the late answer', async () => {
    const fake = await startBroker();
    const late: Array<() => void> = [];
    fake.on('send', (frame, session) => {
      late.push(() => session.send({ type: 'sendResult', id: frame.id, receipts: [] }));
    });
    const onProtocolError = vi.fn();
    const connection = connect(fake.endpoint, { onProtocolError });
    await connection.connect();
    const error = await rejectionOf(connection.request(send('a'), { timeoutMs: 20 }));
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true });
    for (const answer of late) answer();
    fake.on('send', undefined);
    await expect(connection.request(send('b'))).resolves.toMatchObject({ type: 'sendResult' });
    expect(onProtocolError).not.toHaveBeenCalled();
  });

  it('rejects with ABORTED when the signal fires, or at once when it already has', async () => {
    const fake = await startBroker();
    fake.on('send', () => {});
    const connection = connect(fake.endpoint);
    await connection.connect();
    const controller = new AbortController();
    const pending = connection.request(send('a'), { signal: controller.signal });
    await fake.waitForFrames('send');
    controller.abort(new Error('user gave up'));
    const error = await rejectionOf(pending);
    expect(error).toMatchObject({ code: 'ABORTED', retryable: false });
    expect(error.cause).toEqual(new Error('user gave up'));
    const early = await rejectionOf(connection.request(send('b'), { signal: AbortSignal.abort() }));
    expect(early.code).toBe('ABORTED');
    expect(fake.framesOf('send')).toHaveLength(1);
  });

  it('fails with PROTOCOL_ERROR when the answer is not the expected frame type', async () => {
    const fake = await startBroker();
    fake.on('send', (frame, session) => session.send({ type: 'ok', id: frame.id }));
    const onProtocolError = vi.fn();
    const connection = connect(fake.endpoint, { onProtocolError });
    await connection.connect();
    const error = await rejectionOf(connection.request(send('a')));
    expect(error).toMatchObject({ code: 'PROTOCOL_ERROR', retryable: false });
    expect(onProtocolError).toHaveBeenCalledOnce();
  });

  it('reports undecodable frames, fails the request they name, and carries on', async () => {
    const fake = await startBroker();
    fake.on('send', (frame, session) => {
      if (frame.messages[0]?.messageId === 'bad') {
        session.sendRaw(new Uint8Array([0xc1])); // the one byte MessagePack never uses
        session.sendRaw('a text message');
        // Readable id, invalid content: the request it names fails.
        session.sendRaw(encodeFrame({ type: 'sendResult', id: frame.id, receipts: 'nope' } as never));
        return;
      }
      session.send({ type: 'sendResult', id: frame.id, receipts: [] });
    });
    const onProtocolError = vi.fn();
    const connection = connect(fake.endpoint, { onProtocolError });
    await connection.connect();
    const error = await rejectionOf(connection.request(send('bad')));
    expect(error).toMatchObject({ code: 'PROTOCOL_ERROR' });
    expect(onProtocolError).toHaveBeenCalledTimes(3);
    await expect(connection.request(send('good'))).resolves.toMatchObject({ receipts: [] });
    expect(connection.currentStatus.state).toBe('connected');
  });

  it('sends one-way frames only while connected', async () => {
    const fake = await startBroker();
    const connection = connect(fake.endpoint);
    expect(connection.sendOneWay({ type: 'credit', subscriptionId: 1, credits: 5 })).toBe(false);
    await connection.connect();
    expect(connection.sendOneWay({ type: 'credit', subscriptionId: 1, credits: 5 })).toBe(true);
    const [credit] = await fake.waitForFrames('credit');
    expect(credit).toEqual({ type: 'credit', subscriptionId: 1, credits: 5 });
  });
});

describe('unsolicited frames', () => {
  it('hands deliver and id-less error frames to their listeners until unsubscribed', async () => {
    const fake = await startBroker();
    const connection = connect(fake.endpoint);
    await connection.connect();
    const delivered: unknown[] = [];
    const errors: unknown[] = [];
    const stopDeliver = connection.onFrame('deliver', (frame) =>
      delivered.push(frame.messages[0]?.messageId),
    );
    connection.onFrame('error', (frame) => errors.push(frame.code));
    const session = fake.sessions[0];
    session?.send({ type: 'deliver', subscriptionId: 1, messages: [FakeBroker.deliveredMessage()] });
    session?.send({ type: 'error', code: 503, message: 'shutting down' });
    // A request round trip orders the test after the frames sent before it.
    await connection.request(send('sync-1'));
    stopDeliver();
    session?.send({ type: 'deliver', subscriptionId: 1, messages: [FakeBroker.deliveredMessage()] });
    await connection.request(send('sync-2'));
    expect(delivered).toEqual(['0193a1f4c2d87b3e9f6a5c4b3e2d1f00']);
    expect(errors).toEqual([503]);
  });

  it('keeps going when a listener throws, reporting the error', async () => {
    const fake = await startBroker();
    const onHandlerError = vi.fn();
    const connection = connect(fake.endpoint, { onHandlerError });
    await connection.connect();
    connection.onFrame('deliver', () => {
      throw new Error('listener bug');
    });
    fake.sessions[0]?.send({ type: 'deliver', subscriptionId: 1, messages: [FakeBroker.deliveredMessage()] });
    await connection.request(send('sync'));
    expect(onHandlerError).toHaveBeenCalledWith(new Error('listener bug'));
  });
});

describe('reconnect (C1)', () => {
  it('fails in-flight requests with CONNECTION_CLOSED, reconnects, and runs the reconnect hooks', async () => {
    const fake = await startBroker();
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
    const fake = await startBroker();
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
    const fake = await startBroker();
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
    const fake = await startBroker({ onHello: () => ({ code: 503, message: 'starting' }) });
    const connection = connect(fake.endpoint);
    void connection.connect().catch(() => {});
    const error = await rejectionOf(connection.request(send('a'), { timeoutMs: 30 }));
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true });
  });

  it('waits the backoff windows of ExponentialBackoff between attempts and resets after success', async () => {
    const nextDelays = vi.spyOn(ExponentialBackoff.prototype, 'nextDelayMs');
    const reset = vi.spyOn(ExponentialBackoff.prototype, 'reset');
    let refusals = 3;
    const fake = await startBroker({
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
    const fake = await startBroker();
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
    const fake = await startBroker({
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
    const fake = await startBroker();
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

describe('close', () => {
  it('stops a reconnect loop at once, in the middle of a long backoff wait', async () => {
    const fake = await startBroker({ onHello: () => ({ code: 503, message: 'starting' }) });
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
    const fake = await startBroker({ onHello: () => 'ignore' });
    const connection = connect(fake.endpoint, { reconnectBackoff: { minConnectTimeoutMs: 60_000 } });
    const connecting = rejectionOf(connection.connect());
    await vi.waitFor(() => expect(fake.connectionCount).toBe(1));
    await connection.close();
    expect(await connecting).toMatchObject({ code: 'CLIENT_CLOSED' });
    expect(fake.connectionCount).toBe(1);
  });

  it('lets in-flight requests finish, then closes with code 1000', async () => {
    const fake = await startBroker();
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
    const fake = await startBroker();
    fake.on('send', () => {});
    const connection = connect(fake.endpoint);
    await connection.connect();
    const inflight = rejectionOf(connection.request(send('a')));
    await fake.waitForFrames('send');
    await connection.close({ drainTimeoutMs: 20 });
    expect(await inflight).toMatchObject({ code: 'CLIENT_CLOSED', retryable: false });
  });

  it('fails queued requests at once and is idempotent', async () => {
    const fake = await startBroker({ onHello: () => ({ code: 503, message: 'starting' }) });
    const connection = connect(fake.endpoint);
    void connection.connect().catch(() => {});
    const queued = connection.request(send('a'));
    const first = connection.close();
    expect(connection.close()).toBe(first);
    await expect(queued).rejects.toMatchObject({ code: 'CLIENT_CLOSED' });
    await first;
  });

  it('does not reconnect after close and ends every status iterator', async () => {
    const fake = await startBroker();
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
    const fake = await startBroker();
    let observed: Connection | undefined;
    {
      await using connection = new Connection({ endpoint: fake.endpoint, reconnectBackoff: FAST_BACKOFF });
      await connection.connect();
      observed = connection;
    }
    expect(observed.currentStatus.state).toBe('closed');
  });
});
