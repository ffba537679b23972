import type { AddressInfo } from 'node:net';
import {
  ADMIN_CALLS_FEATURE,
  type DeliveredMessage,
  encodeFrame,
  PROTOCOL_VERSION,
} from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { putGroup, startTestBroker } from '../../broker.test-support.js';
import type { BrokerService, QueueAdminCall } from '../../engine/index.js';
import { RawClient } from '../../gateway/raw-client.test-support.js';
import { peerAdminCalls, queueAdminOf } from './peer-admin.js';
import { PeerConnection } from './peer-connection.js';

/**
 * What only the admin calls on a session between brokers do (`peer-admin.ts`); that each answers
 * as the owner's queue does is `queue-admin-paths.test.ts`.
 */
const PEER_TOKEN = 'peer-token-for-tests';

const messageId = (n: number) => `6000000000000000000000000000${String(n).padStart(4, '0')}`;

function openPeer(url: string, maxFrameBytes = 8 * 1024 * 1024) {
  return PeerConnection.open({ url, token: PEER_TOKEN, queue: 0, clientId: 'peer:admin', maxFrameBytes });
}

describe('peerAdminCalls', () => {
  it('is granted by the owner, and cuts a DLQ page to what the forwarding broker reads', async () => {
    await using owner = await startTestBroker({}, { peerToken: PEER_TOKEN });
    await putGroup(owner, 'billing', { startFrom: 'earliest' });
    // Frames of 64 KiB at most: three DLQ copies of 20 KB do not fit in one.
    const connection = await openPeer(owner.url, 64 * 1024);
    expect(connection.granted(ADMIN_CALLS_FEATURE)).toBe(true);
    const admin = peerAdminCalls(connection);
    const client = await RawClient.connect(owner.url);
    try {
      const ids = [1, 2, 3, 4, 5].map(messageId);
      await client.subscribe('billing', { orders: '*' }, ids.length);
      await client.request({
        type: 'send',
        messages: ids.map((id, n) => ({
          messageId: id,
          topic: 'orders',
          body: new Uint8Array(20_000).fill(n),
          bornAt: n,
        })),
      });
      const delivered: DeliveredMessage[] = [];
      while (delivered.length < ids.length) delivered.push(...(await client.nextDelivery()).messages);
      await client.request({
        type: 'nack',
        items: delivered.map((message) => ({
          receiptHandle: message.receiptHandle,
          reason: 'poison',
          deadLetter: true as const,
        })),
      });

      const first = await admin('listDeadLetters', 'billing', 0, 10);
      expect(first.messages.map((message) => message.messageId)).toEqual(ids.slice(0, 2));
      expect(first.cursor).toBe(2);
      // The next pages go on from the cursor, and together list the DLQ as the queue does.
      const listed = [...first.messages];
      let cursor = first.cursor;
      for (let page = 0; cursor !== null && page < 5; page++) {
        const next = await admin('listDeadLetters', 'billing', cursor, 10);
        listed.push(...next.messages);
        cursor = next.cursor;
      }
      expect(cursor).toBeNull();
      const local = owner.engine.queueService(0) as BrokerService;
      expect(listed).toEqual((await local.listDeadLetters('billing', 0, 10)).messages);
    } finally {
      await client.close();
      await connection.close();
    }
  });

  it('answers a client that sends adminCall with 400, and does what it asked of nothing', async () => {
    await using owner = await startTestBroker({}, { peerToken: PEER_TOKEN });
    const client = await RawClient.connect(owner.url);
    try {
      const answer = await client.request({
        type: 'adminCall',
        call: 'putTopic',
        args: ['orders', { type: 'fifo' }],
      });
      expect(answer).toMatchObject({
        type: 'error',
        code: 400,
        message: 'adminCall is only for sessions between brokers',
      });
      expect(await owner.engine.describeTopic('orders')).toBeUndefined();
    } finally {
      await client.close();
    }
  });

  it("answers with the owner's errors, and 503 once the session is gone", async () => {
    await using owner = await startTestBroker({}, { peerToken: PEER_TOKEN });
    const connection = await openPeer(owner.url);
    const admin = peerAdminCalls(connection);
    await expect(admin('fifoHeads', 'nothing', 10)).rejects.toMatchObject({
      code: 404,
      errorName: 'NOT_FOUND',
    });
    await connection.close();
    await expect(admin('describeGroup', 'billing')).rejects.toMatchObject({
      code: 503,
      errorName: 'BROKER_UNAVAILABLE',
    });
  });

  it('asks an owner of an older release, which grants no adminCalls, the way that release answers', async () => {
    // The owner's side of a session as a release before the feature speaks it: no welcome.features.
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    server.on('connection', (socket) =>
      socket.once('message', () =>
        socket.send(
          encodeFrame({
            type: 'welcome',
            protocolVersion: PROTOCOL_VERSION,
            sessionId: 'older-owner',
            maxBodyBytes: 1_024,
            maxFrameBytes: 65_536,
          }),
        ),
      ),
    );
    const { port } = server.address() as AddressInfo;
    const connection = await openPeer(`ws://127.0.0.1:${port}`);
    try {
      expect(connection.granted(ADMIN_CALLS_FEATURE)).toBe(false);
      const overHttp: QueueAdminCall = async () => undefined as never;
      expect(queueAdminOf(connection, () => overHttp)).toBe(overHttp);
    } finally {
      await connection.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
