import { ManualClock } from '@ricochet/core';
import { BrokerError, ERROR_CODES } from '@ricochet/protocol';
import type { FastifyBaseLogger } from 'fastify';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AccessControl } from '../../auth/access-control.js';
import { tokenDigest } from '../../auth/principal-directory.js';
import { ConnectionLimits } from '../connection-limits.js';
import { type RequestFrame, SessionAccess } from '../session-access.js';
import { ConnectionUsage, RequestPipeline } from './request-pipeline.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };

function pipelineWith(options: { accepting?: boolean } = {}) {
  const registry = new Registry();
  const limits = new ConnectionLimits(
    {
      maxConnections: 10,
      maxInflightRequestsPerConnection: 2,
      maxWaitingReceivesPerConnection: 1,
      maxSubscriptionsPerConnection: 1,
    },
    registry,
  );
  const rejected: number[] = [];
  const logged: unknown[] = [];
  const log = { error: (fields: unknown) => logged.push(fields) } as unknown as FastifyBaseLogger;
  const pipeline = new RequestPipeline({
    accepting: () => options.accepting ?? true,
    limits,
    metrics: { rejected: (code) => rejected.push(code) },
    log,
  });
  return { pipeline, rejected, logged, registry };
}

/** A caller that may publish to `orders` only (an auth file with one principal), or anyone. */
function accessOf(authenticated: boolean): SessionAccess {
  const access = new AccessControl({
    authFile: authenticated
      ? {
          principals: [
            {
              name: 'shop',
              tokenSha256: tokenDigest('token').toString('hex'),
              publish: ['orders'],
              consume: [],
              metrics: false,
            },
          ],
        }
      : undefined,
    registry: new Registry(),
    log: silent,
    clock: new ManualClock(0),
  });
  const session = new SessionAccess(access);
  expect(session.hello('token')).toBeUndefined();
  return session;
}

const send = (topic: string): RequestFrame => ({
  type: 'send',
  id: 1,
  messages: [{ messageId: 'm1', topic, body: new Uint8Array(), bornAt: 1 }],
});
const longPoll: RequestFrame = {
  type: 'receive',
  id: 2,
  group: 'billing',
  subscriptions: { orders: '*' },
  maxMessages: 1,
  invisibleDurationMs: 30_000,
  awaitDurationMs: 1_000,
};

describe('RequestPipeline: the stages every front door’s request passes', () => {
  it('refuses every request while the broker drains, 503', () => {
    expect(pipelineWith({ accepting: false }).pipeline.draining()?.code).toBe(
      ERROR_CODES.BROKER_UNAVAILABLE.code,
    );
    expect(pipelineWith().pipeline.draining()).toBeUndefined();
  });

  it('judges access before the caps: a forbidden request is refused even on a connection at its cap', () => {
    const { pipeline } = pipelineWith();
    const usage = new ConnectionUsage();
    usage.begin(send('orders'));
    usage.begin(send('orders'));
    const access = accessOf(true);
    // The principal may not consume: 403, though the connection is also at its cap of requests.
    const forbidden = pipeline.admit(longPoll, access, usage);
    expect(forbidden.ok ? undefined : forbidden.error.code).toBe(ERROR_CODES.FORBIDDEN.code);
    const capped = pipeline.admit(send('orders'), access, usage);
    expect(capped.ok ? undefined : capped.error.code).toBe(ERROR_CODES.TOO_MANY_REQUESTS.code);
    usage.end(send('orders'));
    expect(pipeline.admit(send('orders'), access, usage)).toEqual({ ok: true, principal: 'shop' });
  });

  it('counts a request while it runs, a long poll among the waiting receives, and is idle after', async () => {
    const { pipeline, registry } = pipelineWith();
    const usage = new ConnectionUsage();
    const access = accessOf(false);
    expect(pipeline.admit(longPoll, access, usage)).toEqual({ ok: true, principal: undefined });
    let answer!: (value: string) => void;
    const running = pipeline.run(longPoll, usage, () => new Promise<string>((resolve) => (answer = resolve)));
    expect(usage).toMatchObject({ inflightRequests: 1, waitingReceives: 1 });
    // A second long poll on the connection is past its cap of one, and counted under that limit.
    const second = pipeline.admit(longPoll, access, usage);
    expect(second.ok ? undefined : second.error.code).toBe(ERROR_CODES.TOO_MANY_REQUESTS.code);
    expect(await registry.getSingleMetricAsString('ricochet_limit_rejections_total')).toContain(
      'limit="maxWaitingReceivesPerConnection"} 1',
    );
    let idle = false;
    const whenIdle = usage.idle().then(() => (idle = true));
    answer('messages');
    expect(await running).toBe('messages');
    await whenIdle;
    expect(idle).toBe(true);
    expect(usage).toMatchObject({ inflightRequests: 0, waitingReceives: 0 });
  });

  it('counts a request that fails, or throws before its promise, until it ends', async () => {
    const { pipeline } = pipelineWith();
    const usage = new ConnectionUsage();
    const failing = pipeline.run(send('orders'), usage, () =>
      Promise.reject(BrokerError.of('NOT_FOUND', 'no')),
    );
    expect(usage.inflightRequests).toBe(1);
    await expect(failing).rejects.toThrow('no');
    const throwing = pipeline.run(send('orders'), usage, () => {
      throw new Error('a bug');
    });
    await expect(throwing).rejects.toThrow('a bug');
    expect(usage.inflightRequests).toBe(0);
  });

  it('turns a failure into the catalogue’s error, counted by code; a bug is logged and answered 500', () => {
    const { pipeline, rejected, logged } = pipelineWith();
    const notFound = BrokerError.of('NOT_FOUND', 'no such topic', { topic: 'orders' });
    expect(pipeline.failed(notFound, { session: 's1' })).toBe(notFound);
    const internal = pipeline.failed(new TypeError('a bug'), { session: 's1' });
    expect(internal.code).toBe(ERROR_CODES.INTERNAL_ERROR.code);
    expect(internal.message).toBe('the broker failed to handle the request');
    expect(rejected).toEqual([ERROR_CODES.NOT_FOUND.code, ERROR_CODES.INTERNAL_ERROR.code]);
    expect(logged).toEqual([expect.objectContaining({ session: 's1', err: expect.any(TypeError) })]);
  });
});
