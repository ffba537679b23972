import { connect, type Socket } from 'node:net';
import { WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { eventually } from './support/push.js';
import { RawSocket } from './support/raw-socket.js';
import { OPCODE, RawTcpWebSocket, upgradeRequest } from './support/raw-tcp-websocket.js';
import { startBroker, type TestBroker } from './support/test-broker.js';

const messageId = (n: number) => `limits${String(n).padStart(26, '0')}`;

/** The value of `ricochet_limit_rejections_total{limit}` on the broker's /metrics. */
async function limitRejections(broker: TestBroker, limit: string): Promise<number> {
  const metrics = await (await broker.admin.fetch('GET', '/metrics')).text();
  const line = metrics
    .split('\n')
    .find((row) => row.startsWith(`ricochet_limit_rejections_total{limit="${limit}"}`));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
}

/** The HTTP status a WebSocket upgrade gets: 101 when it opens, else the refusal's status. */
function upgradeStatus(endpoint: string): Promise<{ status: number; socket: WebSocket }> {
  const socket = new WebSocket(`${endpoint}${WEBSOCKET_PATH}`, [WEBSOCKET_SUBPROTOCOL]);
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve({ status: 101, socket }));
    socket.once('unexpected-response', (_request, response) => {
      resolve({ status: response.statusCode ?? 0, socket });
      response.resume();
      socket.terminate();
    });
    socket.once('error', reject);
  });
}

function receiveFrame(id: number, awaitDurationMs: number) {
  return {
    type: 'receive',
    id,
    group: 'pollers',
    subscriptions: { polled: '*' },
    maxMessages: 1,
    invisibleDurationMs: 10_000,
    awaitDurationMs,
  } as const;
}

describe('limits: over a cap a clear error, a metric, and everything else unharmed (DESIGN.md §7)', () => {
  it('refuses the upgrade past --max-connections with HTTP 503, and admits again once one closes', async () => {
    await using broker = await startBroker({ maxConnections: 3 });
    const open = await Promise.all([1, 2, 3].map(() => RawSocket.open(broker.endpoint)));
    const refused = await upgradeStatus(broker.endpoint);
    expect(refused.status).toBe(503);
    expect(await limitRejections(broker, 'maxConnections')).toBe(1);
    // The open sessions still work.
    open[0]?.sendFrame(receiveFrame(1, 0));
    expect(await open[0]?.next()).toMatchObject({ type: 'messages', id: 1 });

    await open[2]?.[Symbol.asyncDispose]();
    const admitted = await eventually(
      () => upgradeStatus(broker.endpoint),
      (attempt) => attempt.status === 101,
    );
    admitted.socket.close();
    for (const socket of open.slice(0, 2)) await socket?.[Symbol.asyncDispose]();
  });

  it('closes with 1009 a frame whose header announces more than --max-frame-bytes, before its payload arrives', async () => {
    await using broker = await startBroker({ maxBodyBytes: 1_024, maxFrameBytes: 1_024 + 65_536 });
    const port = broker.broker.address?.port ?? 0;
    const raw = await RawTcpWebSocket.open(port);
    // A header announcing 1 GiB and a few bytes of payload: the broker must not wait for the rest.
    raw.writeFrame(OPCODE.binary, new Uint8Array(8), { announcedLength: 1024 * 1024 * 1024 });
    expect((await raw.closed).closeCode).toBe(1009);
    expect(await limitRejections(broker, 'maxFrameBytes')).toBe(1);

    await using producer = await startProducer(broker.endpoint);
    expect((await producer.send({ topic: 'fine', body: 'still serving' })).offset).toBe(0);
  });

  it('answers 530 past --max-waiting-receives-per-connection, and the connection carries on', async () => {
    await using broker = await startBroker({ maxWaitingReceivesPerConnection: 2 });
    await using raw = await RawSocket.open(broker.endpoint);
    raw.sendFrame(receiveFrame(1, 20_000));
    raw.sendFrame(receiveFrame(2, 20_000));
    raw.sendFrame(receiveFrame(3, 20_000));
    expect(await raw.next()).toMatchObject({
      type: 'error',
      id: 3,
      code: 530,
      details: { limit: 'maxWaitingReceivesPerConnection', max: 2 },
    });
    // A receive that does not wait is no long poll: it runs.
    raw.sendFrame(receiveFrame(4, 0));
    expect(await raw.next()).toMatchObject({ type: 'messages', id: 4, messages: [] });

    // Two messages wake the two long polls; then a new long poll has room again.
    await using producer = await startProducer(broker.endpoint);
    await producer.send({ topic: 'polled', body: 'a' });
    await producer.send({ topic: 'polled', body: 'b' });
    const woken = [await raw.next(), await raw.next()];
    expect(woken.map((frame) => frame.type)).toEqual(['messages', 'messages']);
    raw.sendFrame(receiveFrame(5, 20_000));
    await producer.send({ topic: 'polled', body: 'c' });
    expect(await raw.next()).toMatchObject({ type: 'messages', id: 5, messages: [{}] });
    expect(await limitRejections(broker, 'maxWaitingReceivesPerConnection')).toBe(1);
  });

  it('answers 530 past --max-inflight-requests-per-connection while the requests it holds are answered', async () => {
    await using broker = await startBroker({ maxInflightRequestsPerConnection: 2 });
    await using raw = await RawSocket.open(broker.endpoint);
    raw.sendFrame(receiveFrame(1, 20_000));
    raw.sendFrame(receiveFrame(2, 20_000));
    raw.sendFrame({
      type: 'send',
      id: 3,
      messages: [{ messageId: messageId(2), topic: 'polled', body: new Uint8Array([1]), bornAt: 1 }],
    });
    expect(await raw.next()).toMatchObject({
      type: 'error',
      id: 3,
      code: 530,
      details: { limit: 'maxInflightRequestsPerConnection', max: 2 },
    });
    // Nothing of the refused send was stored.
    expect((await broker.admin.fetch('GET', `/v1/messages/${messageId(2)}`)).status).toBe(404);
    await using producer = await startProducer(broker.endpoint);
    await producer.send({ topic: 'polled', body: 'a' });
    await producer.send({ topic: 'polled', body: 'b' });
    const polls = [await raw.next(), await raw.next()];
    expect(polls.map((frame) => frame.type)).toEqual(['messages', 'messages']);
    // Once answered, the same request goes through on the same connection.
    raw.sendFrame({
      type: 'send',
      id: 4,
      messages: [{ messageId: messageId(2), topic: 'polled', body: new Uint8Array([1]), bornAt: 1 }],
    });
    expect(await raw.next()).toMatchObject({ type: 'sendResult', id: 4, receipts: [{ ok: true }] });
    expect(await limitRejections(broker, 'maxInflightRequestsPerConnection')).toBe(1);
  });

  it('answers 400 past --max-subscriptions-per-connection; an unsubscribe makes room', async () => {
    await using broker = await startBroker({ maxSubscriptionsPerConnection: 2 });
    await using raw = await RawSocket.open(broker.endpoint);
    const subscribe = (id: number, group: string) =>
      raw.sendFrame({ type: 'subscribe', id, group, subscriptions: { orders: '*' }, maxCachedMessages: 8 });
    subscribe(1, 'a');
    const first = await raw.next();
    subscribe(2, 'b');
    expect(await raw.next()).toMatchObject({ type: 'subscribed', id: 2 });
    subscribe(3, 'c');
    expect(await raw.next()).toMatchObject({
      type: 'error',
      id: 3,
      code: 400,
      details: { limit: 'maxSubscriptionsPerConnection', max: 2 },
    });
    if (first.type !== 'subscribed') throw new Error(`expected subscribed, got ${first.type}`);
    raw.sendFrame({ type: 'unsubscribe', id: 4, subscriptionId: first.subscriptionId });
    expect(await raw.next()).toMatchObject({ type: 'ok', id: 4 });
    subscribe(5, 'c');
    expect(await raw.next()).toMatchObject({ type: 'subscribed', id: 5 });
    expect(await limitRejections(broker, 'maxSubscriptionsPerConnection')).toBe(1);
  });

  it('closes a connection whose WebSocket message never finishes (a fragment deadline), others unharmed', async () => {
    await using broker = await startBroker({ websocketMessageTimeoutMs: 300 });
    const port = broker.broker.address?.port ?? 0;
    const stalled = await RawTcpWebSocket.open(port);
    // The first fragment of a binary message; its last never comes.
    stalled.writeFrame(OPCODE.binary, new Uint8Array([0x81]), { fin: false });
    const partial = await RawTcpWebSocket.open(port);
    // Half of a frame: the header announces 100 bytes, 10 arrive.
    partial.writeFrame(OPCODE.binary, new Uint8Array(10), { announcedLength: 100 });
    await using producer = await startProducer(broker.endpoint);
    await producer.send({ topic: 'fine', body: 'meanwhile' });
    expect((await stalled.closed).closeCode).toBe(1008);
    expect((await partial.closed).closeCode).toBe(1008);
    expect(await limitRejections(broker, 'websocketMessageTimeoutMs')).toBe(2);
    expect((await producer.send({ topic: 'fine', body: 'after' })).offset).toBe(1);
  });

  it('closes HTTP connections that never finish their request line, headers or upgrade', async () => {
    await using broker = await startBroker({ httpHeadersTimeoutMs: 300, httpRequestTimeoutMs: 600 });
    const port = broker.broker.address?.port ?? 0;
    const whole = upgradeRequest();
    const payloads = [
      '', // connects and says nothing
      'GET /v1/ws HT', // half a request line
      whole.slice(0, whole.indexOf('Sec-WebSocket-Key')), // an upgrade cut off in its headers
    ];
    const sockets: Socket[] = [];
    for (let i = 0; i < 60; i++) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      // Read what comes (a 408), so that the close is seen.
      socket.resume();
      socket.write(payloads[i % payloads.length] ?? '');
      sockets.push(socket);
    }
    const closed = sockets.map(
      (socket) => new Promise<void>((resolve) => socket.once('close', () => resolve())),
    );
    // A good client is served meanwhile.
    await using producer = await startProducer(broker.endpoint);
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'meanwhile',
      subscriptions: { fine: '*' },
      awaitDurationMs: 0,
    });
    await producer.send({ topic: 'fine', body: 'served' });
    expect((await consumer.receive(1, 30_000)).map((message) => text(message.body))).toEqual(['served']);
    await Promise.all(closed);
    expect(sockets.every((socket) => socket.destroyed)).toBe(true);
  });
});
