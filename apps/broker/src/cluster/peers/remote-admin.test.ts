import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { startTestBroker } from '../../broker.test-support.js';
import { RemoteAdmin } from './remote-admin.js';

/**
 * What only `RemoteAdmin` does, the admin calls of an owner of an older release over its admin
 * API: reaching it, and being refused by it. That each call answers as the owner's queue does is
 * `queue-admin-paths.test.ts`, for this path and the session between brokers alike.
 */
const PEER_TOKEN = 'peer-token-for-tests';
/** A server that takes requests and never answers them. */
async function silentServer(): Promise<Server & AsyncDisposable> {
  const server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(server, {
    [Symbol.asyncDispose]: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

/** A port of 127.0.0.1 nothing listens on (it did a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** What a call rejects with, or `undefined` when it resolves. */
async function rejectionOf(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('RemoteAdmin', () => {
  it('is refused without the peer token, and answered 503 for a queue the owner does not serve', async () => {
    await using owner = await startTestBroker({}, { peerToken: PEER_TOKEN });
    const stranger = new RemoteAdmin({ url: owner.url, token: 'not-the-peer-token', queue: 0 });
    expect(await rejectionOf(stranger.describeTopic('orders'))).toMatchObject({
      code: 401,
      errorName: 'UNAUTHORIZED',
    });
    const notServed = new RemoteAdmin({ url: owner.url, token: PEER_TOKEN, queue: 1 });
    expect(await rejectionOf(notServed.listTopics(undefined, 10))).toMatchObject({
      code: 503,
      errorName: 'BROKER_UNAVAILABLE',
      message: 'this broker does not serve queue 1',
    });
  });

  it('rejects with 503 when the owner cannot be reached or does not answer in time', async () => {
    const port = await closedPort();
    const unreachable = new RemoteAdmin({ url: `ws://127.0.0.1:${port}`, token: PEER_TOKEN, queue: 2 });
    const refused = await rejectionOf(unreachable.describeTopic('orders'));
    expect(refused).toBeInstanceOf(BrokerError);
    expect(refused).toMatchObject({
      code: 503,
      errorName: 'BROKER_UNAVAILABLE',
      message: expect.stringContaining(`queue 2's owner at http://127.0.0.1:${port}`),
    });

    await using silent = await silentServer();
    const { port: silentPort } = silent.address() as AddressInfo;
    const slow = new RemoteAdmin({
      url: `ws://127.0.0.1:${silentPort}/`,
      token: PEER_TOKEN,
      queue: 0,
      timeoutMs: 50,
    });
    expect(await rejectionOf(slow.putGroup('billing', {}))).toMatchObject({
      code: 503,
      message: expect.stringContaining('no answer within 50 ms'),
    });
  });

  it('reaches a wss:// owner over https://, and takes no other URL', async () => {
    const port = await closedPort();
    const secure = new RemoteAdmin({ url: `wss://127.0.0.1:${port}`, token: PEER_TOKEN, queue: 0 });
    expect(await rejectionOf(secure.describeGroup('billing'))).toMatchObject({
      code: 503,
      message: expect.stringContaining(`https://127.0.0.1:${port}`),
    });
    expect(() => new RemoteAdmin({ url: 'http://127.0.0.1:7720', token: PEER_TOKEN, queue: 0 })).toThrow(
      TypeError,
    );
  });
});
