import { Producer } from '@ricochet/producer';
import { BrokerError, ERROR_CODES, PROTOCOL_VERSION } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { FAST_BACKOFF, startProducer } from './support/clients.js';
import { RawSocket } from './support/raw-socket.js';
import { RawStream } from './support/raw-stream.js';
import { AuthFileFixture } from './support/security.js';
import { startBroker, type TestBroker } from './support/test-broker.js';

/** The value of `ricochet_limit_rejections_total{limit}` on the broker's /metrics. */
async function limitRejections(broker: TestBroker, limit: string): Promise<number> {
  const metrics = await (await broker.admin.fetch('GET', '/metrics')).text();
  const line = metrics
    .split('\n')
    .find((row) => row.startsWith(`ricochet_limit_rejections_total{limit="${limit}"}`));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
}

/** A good producer over TCP still gets its message stored: the bad connection disturbed nobody. */
async function stillServes(broker: TestBroker): Promise<void> {
  await using producer = await startProducer(broker.endpointFor('tcp'));
  await expect(producer.send({ topic: 'fine', body: 'still serving' })).resolves.toMatchObject({ offset: 0 });
}

const hello = { type: 'hello', protocolVersion: PROTOCOL_VERSION } as const;

describe('the TCP listener: hostile input, limits and auth like the WebSocket endpoint (issue 16, DESIGN.md §7)', () => {
  it('answers a length prefix over --max-frame-bytes with 413 and the close code 1009, before the frame arrives', async () => {
    await using broker = await startBroker({ maxBodyBytes: 1_024, maxFrameBytes: 1_024 + 65_536 });
    await using raw = await RawStream.open(broker.endpointFor('tcp'));
    // A prefix announcing 1 GiB and a few bytes: the broker must not wait for the rest.
    raw.sendBytes(new Uint8Array([0x40, 0, 0, 0, 1, 2, 3]));
    const { frames, close } = await raw.transcript();
    expect(frames).toEqual([
      {
        type: 'error',
        code: ERROR_CODES.MESSAGE_TOO_LARGE.code,
        message: `a frame of ${0x40000000} bytes is over maxFrameBytes (${1_024 + 65_536})`,
        details: { limit: 'maxFrameBytes', max: 1_024 + 65_536 },
      },
    ]);
    expect(close?.code).toBe(1009);
    expect(await limitRejections(broker, 'maxFrameBytes')).toBe(1);
    await stillServes(broker);
  });

  it('reads text where frames belong (an HTTP request) as an oversized length, and ends the connection', async () => {
    await using broker = await startBroker();
    await using raw = await RawStream.open(broker.endpointFor('tcp'));
    raw.sendBytes('GET /v1/ws HTTP/1.1\r\nHost: x\r\n\r\n');
    const { frames, close } = await raw.transcript();
    expect(frames).toMatchObject([{ type: 'error', code: 413 }]);
    expect(close?.code).toBe(1009);
    await stillServes(broker);
  });

  it('ends a session whose first frame is garbage or not hello with 400 and 1002, as on WebSocket', async () => {
    await using broker = await startBroker();
    await using garbage = await RawStream.open(broker.endpointFor('tcp'));
    garbage.sendBytes(new Uint8Array([0, 0, 0, 3, 0xc1, 0xc1, 0xc1]));
    await using notHello = await RawStream.open(broker.endpointFor('tcp'));
    notHello.sendFrame({ type: 'credit', subscriptionId: 1, credits: 1 });
    for (const raw of [garbage, notHello]) {
      const { frames, close } = await raw.transcript();
      expect(frames).toMatchObject([{ type: 'error', code: 400 }]);
      expect(close?.code).toBe(1002);
    }
    await stillServes(broker);
  });

  it('answers a bad frame inside a session with 400 and goes on, like the WebSocket endpoint', async () => {
    await using broker = await startBroker();
    await using raw = await RawStream.open(broker.endpointFor('tcp'));
    raw.sendFrame(hello);
    raw.sendFrame({ type: 'receive', id: 7, group: 'g', subscriptions: {}, maxMessages: -1 });
    raw.sendFrame({ type: 'register', id: 8, group: 'readers', subscriptions: { orders: '*' } });
    await expect.poll(() => raw.framesSoFar.length).toBe(3);
    expect(raw.framesSoFar).toMatchObject([
      { type: 'welcome' },
      { type: 'error', id: 7, code: 400 },
      { type: 'ok', id: 8 },
    ]);
    expect(raw.isOpen).toBe(true);
  });

  it('refuses a broken close record with 400 and 1002', async () => {
    await using broker = await startBroker();
    await using raw = await RawStream.open(broker.endpointFor('tcp'));
    raw.sendFrame(hello);
    raw.sendBytes(new Uint8Array([0, 0, 0, 0, 0, 0, 0, 1, 0xe8]));
    const { frames, close } = await raw.transcript();
    expect(frames).toMatchObject([
      { type: 'welcome' },
      { type: 'error', code: 400, message: 'a close record carries 2 to 125 bytes, not 1' },
    ]);
    expect(close?.code).toBe(1002);
  });

  it('refuses a hello without a valid token with 401 and 1008; the client does not retry, as on WebSocket', async () => {
    using auth = new AuthFileFixture({ writer: { publish: ['*'] } });
    await using broker = await startBroker({ authFile: auth.path });
    await using raw = await RawStream.open(broker.endpointFor('tcp'));
    raw.sendFrame({ ...hello, token: 'not-a-token' });
    const { frames, close } = await raw.transcript();
    expect(frames).toMatchObject([{ type: 'error', code: ERROR_CODES.UNAUTHORIZED.code }]);
    expect(close?.code).toBe(1008);

    for (const transport of ['ws', 'tcp'] as const) {
      const producer = new Producer({
        endpoint: broker.endpointFor(transport),
        reconnectBackoff: FAST_BACKOFF,
      });
      const refused = await producer.start().catch((error: unknown) => error);
      await producer.close();
      expect(refused).toBeInstanceOf(BrokerError);
      expect(refused).toMatchObject({ code: 401, retryable: false });
    }
    await using writer = await startProducer(broker.endpointFor('tcp'), { token: auth.token('writer') });
    await expect(writer.send({ topic: 'orders', body: 'x' })).resolves.toMatchObject({ offset: 0 });
  });

  it('closes a connection that never sends hello by --hello-timeout-ms, with 400 and 1002', async () => {
    await using broker = await startBroker({ helloTimeoutMs: 200 });
    await using raw = await RawStream.open(broker.endpointFor('tcp'));
    const { frames, close } = await raw.transcript();
    expect(frames).toMatchObject([{ type: 'error', code: 400, message: 'no hello within 200 ms' }]);
    expect(close?.code).toBe(1002);
  });

  it('closes a frame that never finishes by its deadline with 1008, others unharmed', async () => {
    await using broker = await startBroker({ websocketMessageTimeoutMs: 300 });
    await using raw = await RawStream.open(broker.endpointFor('tcp'));
    raw.sendFrame(hello);
    // Announce 100 bytes, send 3.
    raw.sendBytes(new Uint8Array([0, 0, 0, 100, 1, 2, 3]));
    const { close } = await raw.transcript();
    expect(close).toEqual({ code: 1008, reason: 'frame not finished within 300 ms' });
    expect(await limitRejections(broker, 'websocketMessageTimeoutMs')).toBe(1);
    await stillServes(broker);
  });

  it('counts WebSocket and TCP connections together against --max-connections: 503 and 1013 over TCP', async () => {
    await using broker = await startBroker({ maxConnections: 2 });
    await using webSocket = await RawSocket.open(broker.endpoint);
    await using first = await RawStream.open(broker.endpointFor('tcp'));
    first.sendFrame(hello);
    await expect.poll(() => first.framesSoFar.length).toBe(1);
    await using refused = await RawStream.open(broker.endpointFor('tcp'));
    const { frames, close } = await refused.transcript();
    expect(frames).toMatchObject([{ type: 'error', code: ERROR_CODES.BROKER_UNAVAILABLE.code }]);
    expect(close?.code).toBe(1013);
    expect(await limitRejections(broker, 'maxConnections')).toBe(1);
    expect(webSocket.isOpen && first.isOpen).toBe(true);
  });

  it('tells a client the code and reason of a broker shutdown the same way over TCP as over WebSocket', async () => {
    const broker = await startBroker();
    const producers = await Promise.all(
      (['ws', 'tcp'] as const).map((transport) => startProducer(broker.endpointFor(transport))),
    );
    try {
      const statuses = producers.map((producer) => nextDisconnect(producer));
      await broker.close();
      const messages = await Promise.all(statuses);
      expect(messages).toEqual([
        'the connection closed (code 1001: broker shutting down)',
        'the connection closed (code 1001: broker shutting down)',
      ]);
    } finally {
      for (const producer of producers) await producer.close({ drainTimeoutMs: 0 });
    }
  });
});

/** The message of the producer's first `disconnected` status. */
async function nextDisconnect(producer: Producer): Promise<string> {
  for await (const status of producer.status()) {
    if (status.state === 'disconnected') return status.error?.message ?? '';
  }
  return '';
}
