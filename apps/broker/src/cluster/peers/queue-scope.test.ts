import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '@ricochet/core';
import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerHttpAccess } from '../../admin/http-access.js';
import { registerTopicRoutes } from '../../admin/topic-routes.js';
import { AccessControl } from '../../auth/access-control.js';
import { tokenDigest } from '../../auth/principal-directory.js';
import { startTestBroker } from '../../broker.test-support.js';
import type { BrokerService, TopicView } from '../../engine/index.js';
import { QUEUE_HEADER, registerQueueScope } from './queue-scope.js';

const PEER_TOKEN = 'peer-token-for-tests';

type TestBroker = Awaited<ReturnType<typeof startTestBroker>>;

/** A request to the broker's admin API, with the headers given; the answer's status and JSON body. */
async function call(
  broker: TestBroker,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown>; authenticate: string | null }> {
  const response = await fetch(`http://127.0.0.1:${broker.address?.port}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text === '' || !text.startsWith('{') ? {} : (JSON.parse(text) as Record<string, unknown>),
    authenticate: response.headers.get('www-authenticate'),
  };
}

const peer = (queue: string, token = PEER_TOKEN) => ({
  [QUEUE_HEADER]: queue,
  authorization: `Bearer ${token}`,
});

describe('the admin API scoped to one queue (ricochet-queue)', () => {
  it("answers from the queue's own service with the peer token", async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    const put = await call(broker, 'PUT', '/v1/topics/orders', peer('0'), { type: 'fifo' });
    expect(put).toMatchObject({ status: 200, body: { name: 'orders', config: { type: 'fifo' } } });
    expect(broker.engine.queueService(0)?.describeTopic('orders')).toMatchObject({ name: 'orders' });
    const got = await call(broker, 'GET', '/v1/topics/orders', peer('0'));
    expect(got).toMatchObject({ status: 200, body: { name: 'orders', stats: { nextOffset: 0 } } });
    // Every admin action, writes too: the peer token is not limited like a principal.
    const group = await call(broker, 'PUT', '/v1/groups/billing', peer('0'), { fifo: true });
    expect(group.status).toBe(200);
  });

  it('refuses it without the peer token, or with another token, and changes nothing', async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    const none = await call(broker, 'PUT', '/v1/topics/orders', { [QUEUE_HEADER]: '0' }, { type: 'normal' });
    expect(none).toMatchObject({
      status: 401,
      body: {
        error: {
          name: 'UNAUTHORIZED',
          message: expect.stringContaining("the cluster's peer token"),
        },
      },
      authenticate: 'Bearer realm="ricochet"',
    });
    const wrong = await call(broker, 'PUT', '/v1/topics/orders', peer('0', 'not-the-peer-token'), {
      type: 'normal',
    });
    expect(wrong).toMatchObject({ status: 401, body: { error: { name: 'UNAUTHORIZED' } } });
    expect((await call(broker, 'GET', '/v1/topics/orders', { [QUEUE_HEADER]: '0' })).status).toBe(401);
    expect(broker.engine.describeTopic('orders')).toBeUndefined();
    // Without the header, nothing changed: no auth file, no token needed.
    expect((await call(broker, 'PUT', '/v1/topics/orders', {}, { type: 'normal' })).status).toBe(200);
  });

  it('answers 503 for a queue this broker does not serve, and 400 for a header that is no queue', async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    expect(await call(broker, 'GET', '/v1/topics', peer('1'))).toMatchObject({
      status: 503,
      body: { error: { name: 'BROKER_UNAVAILABLE', message: 'this broker does not serve queue 1' } },
    });
    for (const malformed of ['x', '-1', '01', '1.0', '64', '0x1', '0, 1']) {
      expect(await call(broker, 'GET', '/v1/topics', peer(malformed)), malformed).toMatchObject({
        status: 400,
        body: { error: { name: 'BAD_REQUEST', message: expect.stringContaining(QUEUE_HEADER) } },
      });
    }
  });

  it('answers 503 on a broker without a peer token: it serves no queue to other brokers', async () => {
    await using broker = await startTestBroker();
    expect(await call(broker, 'PUT', '/v1/topics/orders', peer('0'), { type: 'normal' })).toMatchObject({
      status: 503,
      body: { error: { name: 'BROKER_UNAVAILABLE', message: 'this broker does not serve queue 0' } },
    });
    expect(broker.engine.describeTopic('orders')).toBeUndefined();
  });

  it("refuses the header on the whole broker's routes, which have no per-queue answer", async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    for (const path of ['/v1/counters', '/metrics', '/healthz', '/v1/cluster', '/ui/']) {
      expect(await call(broker, 'GET', path, peer('0')), path).toMatchObject({
        status: 400,
        body: { error: { name: 'BAD_REQUEST', message: expect.stringContaining(`GET ${path}`) } },
      });
    }
    // A path under the queue's routes that no route serves is still judged as the queue's.
    expect((await call(broker, 'GET', '/v1/topics/orders/nothing', peer('0'))).status).toBe(404);
    expect((await call(broker, 'GET', '/v1/topics/orders/nothing', { [QUEUE_HEADER]: '0' })).status).toBe(
      401,
    );
  });

  it("takes the peer token past an auth file, and no principal's token with the header", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ricochet-queue-scope-'));
    try {
      const authFile = join(dir, 'auth.json');
      const principal = {
        name: 'ops',
        tokenSha256: tokenDigest('ops-token').toString('hex'),
        admin: 'write',
      };
      writeFileSync(authFile, JSON.stringify({ principals: [principal] }));
      await using broker = await startTestBroker({ authFile }, { peerToken: PEER_TOKEN });

      expect((await call(broker, 'PUT', '/v1/topics/orders', peer('0'), { type: 'normal' })).status).toBe(
        200,
      );
      expect((await call(broker, 'GET', '/v1/topics/orders', peer('0'))).status).toBe(200);
      // The principal may administer the broker, but not speak for a broker.
      expect(
        await call(broker, 'PUT', '/v1/topics/audit', peer('0', 'ops-token'), { type: 'normal' }),
      ).toMatchObject({
        status: 401,
        body: { error: { name: 'UNAUTHORIZED' } },
      });
      expect(broker.engine.describeTopic('audit')).toBeUndefined();
      // Without the header, the principals' rules as before: the peer token is no principal's.
      expect(
        (await call(broker, 'GET', '/v1/topics/orders', { authorization: 'Bearer ops-token' })).status,
      ).toBe(200);
      expect(
        (await call(broker, 'GET', '/v1/topics/orders', { authorization: `Bearer ${PEER_TOKEN}` })).status,
      ).toBe(401);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('registerQueueScope', () => {
  /** A service that answers `describeTopic` with its own name, so an answer tells who gave it. */
  function named(name: string): BrokerService {
    const view: TopicView = {
      name,
      config: { type: 'normal' },
      stats: { firstOffset: 0, nextOffset: 0, messages: 0 },
    };
    return { describeTopic: () => view } as unknown as BrokerService;
  }

  it('answers each request from the service of the queue it names, and the whole broker without one', async () => {
    const queues = [named('queue-0'), named('queue-1'), undefined, named('queue-3')];
    const broker = {
      ...named('whole-broker'),
      queueService: (queue: number) => queues[queue],
    } as BrokerService;
    const app = Fastify();
    try {
      const serviceOf = registerQueueScope(app, broker, {
        token: PEER_TOKEN,
        queueService: (queue) => broker.queueService(queue),
      });
      registerTopicRoutes(app, serviceOf);
      const answerOf = async (headers: Record<string, string>) => {
        const response = await app.inject({ method: 'GET', url: '/v1/topics/any', headers });
        return { status: response.statusCode, name: (response.json() as { name?: string }).name };
      };
      expect(await answerOf({})).toEqual({ status: 200, name: 'whole-broker' });
      expect(await answerOf(peer('0'))).toEqual({ status: 200, name: 'queue-0' });
      expect(await answerOf(peer('3'))).toEqual({ status: 200, name: 'queue-3' });
      expect(await answerOf(peer('2'))).toMatchObject({ status: 503 });
      expect(await answerOf(peer('4'))).toMatchObject({ status: 503 });
    } finally {
      await app.close();
    }
  });

  it('is refused by the principals guard when registered after it: the guard lets through only what it admitted', async () => {
    const access = new AccessControl({
      authFile: { principals: [] },
      registry: new Registry(),
      log: { info: () => {}, warn: () => {}, error: () => {} },
      clock: new ManualClock(0),
    });
    const broker = { ...named('whole-broker'), queueService: () => named('queue-0') } as BrokerService;
    const app = Fastify();
    try {
      registerHttpAccess(app, access);
      const serviceOf = registerQueueScope(app, broker, {
        token: PEER_TOKEN,
        queueService: (queue) => broker.queueService(queue),
      });
      registerTopicRoutes(app, serviceOf);
      const response = await app.inject({ method: 'GET', url: '/v1/topics/any', headers: peer('0') });
      expect(response.statusCode).toBe(401);
    } finally {
      await app.close();
    }
  });
});
