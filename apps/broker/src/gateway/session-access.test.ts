import { ManualClock } from '@ricochet/core';
import { BrokerError, type SendReceipt } from '@ricochet/protocol';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AccessControl } from '../auth/access-control.js';
import type { AuthFile } from '../auth/auth-file.js';
import { tokenDigest } from '../auth/principal-directory.js';
import { encodeReceiptHandle } from '../engine/index.js';
import { type RequestFrame, SessionAccess, sendAllowed } from './session-access.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };

function authFile(principals: Partial<AuthFile['principals'][number]>[]): AuthFile {
  return {
    principals: principals.map((fields, index) => ({
      name: `p${index}`,
      tokenSha256: tokenDigest(`token-${index}`).toString('hex'),
      publish: [],
      consume: [],
      metrics: false,
      ...fields,
    })),
  };
}

function sessionFor(file: AuthFile | undefined, token = 'token-0') {
  const access = new AccessControl({
    authFile: file,
    registry: new Registry(),
    log: silent,
    clock: new ManualClock(0),
  });
  const session = new SessionAccess(access);
  expect(session.hello(token)).toBeUndefined();
  return { access, session };
}

const message = (topic: string, n = 0) => ({ messageId: `m${n}`, topic, body: new Uint8Array(), bornAt: 1 });
const send = (...topics: string[]): RequestFrame => ({ type: 'send', id: 1, messages: topics.map(message) });
const handle = (group: string, topic: string) =>
  encodeReceiptHandle({ kind: 'clustering', group, topic, offset: 0, lease: 1 });

describe('SessionAccess', () => {
  it('allows everything, naming no principal, without an auth file', () => {
    const { session } = sessionFor(undefined, 'anything');
    expect(session.check(send('orders'))).toEqual({ ok: true, principal: undefined });
    expect(session.check({ type: 'ack', id: 1, receiptHandles: [handle('g', 't')] })).toEqual({
      ok: true,
      principal: undefined,
    });
  });

  it('refuses hello without a token or with an unknown one', () => {
    const access = new AccessControl({
      authFile: authFile([{}]),
      registry: new Registry(),
      log: silent,
      clock: new ManualClock(0),
    });
    expect(new SessionAccess(access).hello(undefined)).toBe('a token is required');
    expect(new SessionAccess(access).hello('token-9')).toBe('the token is not accepted');
  });

  it('refuses single messages of a send with 403 by index, naming their topic', () => {
    const { session } = sessionFor(authFile([{ publish: ['orders'] }]));
    const verdict = session.check(send('orders', 'audit', 'orders', 'audit'));
    expect(verdict.ok).toBe(true);
    if (!verdict.ok) return;
    expect(verdict.principal).toBe('p0');
    expect([...(verdict.forbidden?.keys() ?? [])]).toEqual([1, 3]);
    expect(verdict.forbidden?.get(1)).toMatchObject({ code: 403, details: { topic: 'audit' } });
    expect(session.check(send('orders'))).toEqual({ ok: true, principal: 'p0' });
  });

  it('refuses a send over the rate whole, with the retry-after hint', () => {
    const { session } = sessionFor(authFile([{ publish: ['orders'], publishRatePerSecond: 2 }]));
    expect(session.check(send('orders', 'orders')).ok).toBe(true);
    const verdict = session.check(send('orders'));
    expect(verdict).toMatchObject({
      ok: false,
      endSession: false,
      error: { code: 530, details: { retryAfterMs: 500 } },
    });
    // Refused messages take no part of the rate.
    expect(session.check(send('audit'))).toMatchObject({ ok: true });
  });

  it('needs consume on the group for every subscribed topic', () => {
    const { session } = sessionFor(authFile([{ consume: [{ group: 'billing-*', topics: ['orders'] }] }]));
    const subscribe = (group: string, ...topics: string[]): RequestFrame => ({
      type: 'subscribe',
      id: 1,
      group,
      subscriptions: Object.fromEntries(topics.map((topic) => [topic, '*'])),
      maxCachedMessages: 10,
    });
    expect(session.check(subscribe('billing-eu', 'orders'))).toEqual({ ok: true, principal: 'p0' });
    expect(session.check(subscribe('shipping', 'orders'))).toMatchObject({ ok: false, error: { code: 403 } });
    expect(session.check(subscribe('billing-eu', 'orders', 'payments'))).toMatchObject({ ok: false });
    expect(
      session.check({ type: 'register', id: 2, group: 'shipping', subscriptions: { orders: '*' } }),
    ).toMatchObject({ ok: false, error: { code: 403 } });
  });

  it("settles only handles of the principal's groups and topics, broadcast ones too", () => {
    const { session } = sessionFor(authFile([{ consume: [{ group: 'billing', topics: ['orders'] }] }]));
    const broadcast = (group: string) =>
      encodeReceiptHandle({ kind: 'broadcast', group, topic: 'orders', offset: 0, lease: 1, clientId: 'c' });
    expect(
      session.check({
        type: 'ack',
        id: 1,
        receiptHandles: [handle('billing', 'orders'), broadcast('billing')],
      }),
    ).toEqual({
      ok: true,
      principal: 'p0',
    });
    for (const frame of [
      { type: 'ack', id: 2, receiptHandles: [handle('billing', 'orders'), handle('shipping', 'orders')] },
      { type: 'release', id: 3, receiptHandles: [broadcast('shipping')] },
      { type: 'nack', id: 4, items: [{ receiptHandle: handle('billing', 'payments') }] },
      {
        type: 'changeInvisibleDuration',
        id: 5,
        receiptHandle: handle('shipping', 'orders'),
        invisibleDurationMs: 10,
      },
    ] as RequestFrame[])
      expect(session.check(frame), frame.type).toMatchObject({ ok: false, error: { code: 403 } });
    // A string that is no handle names nothing to check: the engine answers it as for anyone.
    expect(session.check({ type: 'ack', id: 6, receiptHandles: ['not-a-handle'] })).toEqual({
      ok: true,
      principal: 'p0',
    });
  });

  it('ends the session with 401 once a reload removed its token', () => {
    const { access, session } = sessionFor(authFile([{ publish: ['orders'] }]));
    access.replace(authFile([]));
    expect(session.check(send('orders'))).toMatchObject({
      ok: false,
      endSession: true,
      error: { code: 401 },
    });
    expect(session.check({ type: 'unsubscribe', id: 1, subscriptionId: 1 })).toMatchObject({ ok: true });
  });
});

describe('sendAllowed', () => {
  it('sends the allowed messages and answers all, in order', async () => {
    const messages = ['a', 'b', 'c', 'd'].map((topic, n) => message(topic, n));
    const sent: string[][] = [];
    const receipts = await sendAllowed(
      messages,
      new Map([
        [1, BrokerError.of('FORBIDDEN', 'no b', { topic: 'b' })],
        [2, BrokerError.of('FORBIDDEN', 'no c')],
      ]),
      (m) => m.messageId,
      async (allowed) => {
        sent.push(allowed.map((m) => m.messageId));
        return allowed.map(
          (m, offset): SendReceipt => ({ ok: true, messageId: m.messageId, offset, duplicate: false }),
        );
      },
    );
    expect(sent).toEqual([['m0', 'm3']]);
    expect(receipts).toEqual([
      { ok: true, messageId: 'm0', offset: 0, duplicate: false },
      { ok: false, messageId: 'm1', error: { code: 403, message: 'no b', details: { topic: 'b' } } },
      { ok: false, messageId: 'm2', error: { code: 403, message: 'no c' } },
      { ok: true, messageId: 'm3', offset: 1, duplicate: false },
    ]);
  });

  it('sends nothing when every message is refused', async () => {
    let calls = 0;
    const receipts = await sendAllowed(
      [message('a')],
      new Map([[0, BrokerError.of('FORBIDDEN', 'no')]]),
      (m) => m.messageId,
      async () => {
        calls++;
        return [];
      },
    );
    expect(calls).toBe(0);
    expect(receipts).toMatchObject([{ ok: false, error: { code: 403 } }]);
  });
});
