import { FAST_BACKOFF, FakeBroker, fakeBrokerPerTest, rejectionOf } from '@ricochet/client-testkit';
import { BrokerError, encodeFrame, type SendFrame } from '@ricochet/protocol';
import { describe, expect, it, vi } from 'vitest';
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

describe('requests', () => {
  it('correlates answers by id, whatever their order', async () => {
    const fake = await brokers.start();
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
    const fake = await brokers.start();
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
    const fake = await brokers.start();
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
    const fake = await brokers.start();
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
    const fake = await brokers.start();
    fake.on('send', (frame, session) => session.send({ type: 'ok', id: frame.id }));
    const onProtocolError = vi.fn();
    const connection = connect(fake.endpoint, { onProtocolError });
    await connection.connect();
    const error = await rejectionOf(connection.request(send('a')));
    expect(error).toMatchObject({ code: 'PROTOCOL_ERROR', retryable: false });
    expect(onProtocolError).toHaveBeenCalledOnce();
  });

  it('reports undecodable frames, fails the request they name, and carries on', async () => {
    const fake = await brokers.start();
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
    const fake = await brokers.start();
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
    const fake = await brokers.start();
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
    const fake = await brokers.start();
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
