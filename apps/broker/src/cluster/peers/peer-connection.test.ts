import type { AddressInfo } from 'node:net';
import { BrokerError, encodeFrame, PROTOCOL_VERSION } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { putGroup, startTestBroker } from '../../broker.test-support.js';
import { CLOSE_GRACE_MS, PeerConnection, type PeerSubscriptionListener } from './peer-connection.js';

const PEER_TOKEN = 'peer-token-for-tests';
const MAX_FRAME_BYTES = 8 * 1024 * 1024;

const messageId = (n: number) => `3000000000000000000000000000${String(n).padStart(4, '0')}`;

function openPeer(url: string, token = PEER_TOKEN, onClose?: (reason: string) => void) {
  return PeerConnection.open({
    url,
    token,
    queue: 0,
    clientId: 'peer:test',
    maxFrameBytes: MAX_FRAME_BYTES,
    ...(onClose ? { onClose } : {}),
  });
}

/** A listener that records what it hears, and resolves waiters on each event. */
function recordingListener() {
  const events: string[] = [];
  let wake = () => {};
  const listener: PeerSubscriptionListener = {
    deliver: (_, messages) => {
      events.push(`deliver ${messages.map((m) => m.messageId.slice(-2)).join(',')}`);
      wake();
    },
    creditWanted: (ready, late) => {
      events.push(`wanted ${ready}${late ? ' late' : ''}`);
      wake();
    },
    creditReturned: (credits) => {
      events.push(`returned ${credits}`);
      wake();
    },
  };
  const until = async (count: number) => {
    // Bounded by the test's timeout: each event wakes it.
    while (events.length < count) await new Promise<void>((resolve) => (wake = resolve));
  };
  return { events, listener, until };
}

describe('PeerConnection', () => {
  it('forwards requests to a queue, and hears a subscription lend and return credit', async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    await putGroup(broker, 'billing', {});
    const peer = await openPeer(broker.url);
    const { events, listener, until } = recordingListener();
    const subscriptionId = await peer.subscribe(
      {
        type: 'subscribe',
        group: 'billing',
        subscriptions: { orders: '*' },
        maxCachedMessages: 1,
        onBehalfOf: { consumerId: 'worker-1' },
      },
      listener,
    );
    await until(1);
    expect(events).toEqual(['returned 1']);

    const sent = await peer.request({
      type: 'send',
      messages: [1, 2, 3].map((n) => ({
        messageId: messageId(n),
        topic: 'orders',
        body: new Uint8Array([n]),
        bornAt: 1,
      })),
    });
    expect(sent).toMatchObject({
      type: 'sendResult',
      receipts: [{ offset: 0 }, { offset: 1 }, { offset: 2 }],
    });
    await until(2);
    expect(events[1]).toBe('wanted 3');
    peer.credit(subscriptionId, 5);
    await until(4);
    expect(events.slice(2)).toEqual(['deliver 01,02,03', 'returned 2']);
    await peer.close();
    expect(peer.open).toBe(false);
  });

  it('rejects with the owner refusal, or 503 when the owner cannot be reached', async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    const refused = await openPeer(broker.url, 'not-the-token').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BrokerError);
    expect(refused).toMatchObject({ code: 401 });
    const port = broker.address?.port;
    await broker.close();
    const unreachable = await openPeer(`ws://127.0.0.1:${port}`).catch((error: unknown) => error);
    expect(unreachable).toMatchObject({ code: 503 });
  });

  it('fails what is in flight with 503 when the owner goes away', async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    await putGroup(broker, 'billing', {});
    const reasons: string[] = [];
    const peer = await openPeer(broker.url, PEER_TOKEN, (reason) => reasons.push(reason));
    await peer.request({ type: 'register', group: 'billing', subscriptions: { orders: '*' } });
    const waiting = peer
      .request({
        type: 'receive',
        group: 'billing',
        subscriptions: { orders: '*' },
        maxMessages: 1,
        invisibleDurationMs: 10_000,
        awaitDurationMs: 30_000,
      })
      .catch((error: unknown) => error);
    await broker.close();
    // A draining broker answers its waiting receives empty, or the connection closes first.
    const outcome = await waiting;
    if (outcome instanceof BrokerError) expect(outcome.code).toBe(503);
    else expect(outcome).toMatchObject({ type: 'messages', messages: [] });
    await expect(
      peer.request({ type: 'register', group: 'billing', subscriptions: { orders: '*' } }),
    ).rejects.toMatchObject({
      code: 503,
    });
    expect(reasons).toHaveLength(1);
    expect(peer.open).toBe(false);
  });
});

/**
 * A WebSocket server that welcomes one peer, then does what `after` says with its socket: hands
 * it to the test (`ignore`: reads but never answers a request) or stops reading it (`hang`, as a
 * stopped process would: no pong, no close).
 */
async function fakeOwner(after: 'ignore' | 'hang') {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  server.on('connection', (socket) => {
    socket.once('message', () => {
      socket.send(
        encodeFrame({
          type: 'welcome',
          protocolVersion: PROTOCOL_VERSION,
          sessionId: 'fake-owner',
          maxBodyBytes: 1_024,
          maxFrameBytes: 65_536,
        }),
      );
      if (after === 'hang') (socket as unknown as { _socket: { pause(): void } })._socket.pause();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    [Symbol.asyncDispose]: async () => {
      for (const client of server.clients) client.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const register = { type: 'register', group: 'billing', subscriptions: { orders: '*' } } as const;

describe('PeerConnection, per-request timeout and ping', () => {
  it('fails a request unanswered within requestTimeoutMs with 408, and stays open', async () => {
    await using owner = await fakeOwner('ignore');
    const peer = await PeerConnection.open({
      url: owner.url,
      token: PEER_TOKEN,
      queue: 0,
      clientId: 'peer:test',
      maxFrameBytes: MAX_FRAME_BYTES,
      requestTimeoutMs: 50,
    });
    try {
      const started = performance.now();
      await expect(peer.request(register)).rejects.toMatchObject({ code: 408, retryable: true });
      expect(performance.now() - started).toBeGreaterThanOrEqual(50 - 2);
      expect(peer.open).toBe(true);
    } finally {
      await peer.close();
    }
  });

  it('gives a receive its awaitDurationMs on top of requestTimeoutMs', async () => {
    await using owner = await fakeOwner('ignore');
    const peer = await PeerConnection.open({
      url: owner.url,
      token: PEER_TOKEN,
      queue: 0,
      clientId: 'peer:test',
      maxFrameBytes: MAX_FRAME_BYTES,
      requestTimeoutMs: 20,
    });
    try {
      const started = performance.now();
      await expect(
        peer.request({
          type: 'receive',
          group: 'billing',
          subscriptions: { orders: '*' },
          maxMessages: 1,
          invisibleDurationMs: 10_000,
          awaitDurationMs: 100,
        }),
      ).rejects.toMatchObject({ code: 408 });
      expect(performance.now() - started).toBeGreaterThanOrEqual(120 - 2);
    } finally {
      await peer.close();
    }
  });

  it('closes when a ping is not answered by the next one: in-flight requests fail with 503', async () => {
    await using owner = await fakeOwner('hang');
    const reasons: string[] = [];
    const peer = await PeerConnection.open({
      url: owner.url,
      token: PEER_TOKEN,
      queue: 0,
      clientId: 'peer:test',
      maxFrameBytes: MAX_FRAME_BYTES,
      pingIntervalMs: 40,
      onClose: (reason) => reasons.push(reason),
    });
    const started = performance.now();
    const error = await peer.request(register).catch((failure: unknown) => failure);
    // Found by the second ping, long before the request's own 30 s.
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(error).toMatchObject({ code: 503 });
    expect(reasons).toEqual([expect.stringContaining('did not answer a ping within 40 ms')]);
    expect(peer.open).toBe(false);
  });

  it('stays open while the owner answers its pings', async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    await putGroup(broker, 'billing', {});
    const reasons: string[] = [];
    const peer = await PeerConnection.open({
      url: broker.url,
      token: PEER_TOKEN,
      queue: 0,
      clientId: 'peer:test',
      maxFrameBytes: MAX_FRAME_BYTES,
      pingIntervalMs: 10,
      onClose: (reason) => reasons.push(reason),
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(reasons).toEqual([]);
      expect(peer.open).toBe(true);
      await expect(peer.request(register)).resolves.toMatchObject({ type: 'ok' });
    } finally {
      await peer.close();
    }
  });
});

describe('PeerConnection, with an owner that stops answering', () => {
  it('closes within its grace when the owner never answers the close', async () => {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    server.on('connection', (socket) => {
      socket.once('message', () => {
        socket.send(
          encodeFrame({
            type: 'welcome',
            protocolVersion: PROTOCOL_VERSION,
            sessionId: 'hung-owner',
            maxBodyBytes: 1_024,
            maxFrameBytes: 65_536,
          }),
        );
        // From now on the owner reads nothing, as a stopped process would: no close comes back.
        (socket as unknown as { _socket: { pause(): void } })._socket.pause();
      });
    });
    try {
      const { port } = server.address() as AddressInfo;
      const peer = await openPeer(`ws://127.0.0.1:${port}`);
      const started = performance.now();
      await peer.close();
      expect(performance.now() - started).toBeLessThan(CLOSE_GRACE_MS * 5);
      expect(peer.open).toBe(false);
    } finally {
      for (const client of server.clients) client.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
