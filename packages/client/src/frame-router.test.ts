import { deliveredMessage } from '@ricochet/client-testkit';
import { type BrokerFrame, encodeFrame, PROTOCOL_VERSION } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ClientError } from './client-error.js';
import { FrameRouter } from './frame-router.js';
import { RequestTable } from './request-table.js';

// The requests' timeouts never fire here; fake timers keep them from outliving the tests.
beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/** A router over a table holding one `unsubscribe` in flight (id 0), and what it reported. */
function routerWithOneRequest() {
  const requests = new RequestTable();
  const link = { send: () => {} };
  const answer = requests.add({ type: 'unsubscribe', subscriptionId: 1 }, 60_000, undefined, link).then(
    (frame) => ({ answered: frame }),
    (error: unknown) => ({ failed: error }),
  );
  const protocolErrors: ClientError[] = [];
  const handlerErrors: unknown[] = [];
  const router = new FrameRouter({
    requests,
    onProtocolError: (error) => protocolErrors.push(error),
    onHandlerError: (error) => handlerErrors.push(error),
  });
  return { router, answer, protocolErrors, handlerErrors };
}

const bytes = (frame: BrokerFrame) => encodeFrame(frame);

describe('FrameRouter', () => {
  it('hands an answer to the request its id names', async () => {
    const { router, answer, protocolErrors } = routerWithOneRequest();
    router.route(bytes({ type: 'ok', id: 0 }));
    expect(await answer).toEqual({ answered: { type: 'ok', id: 0 } });
    expect(protocolErrors).toEqual([]);
  });

  it('hands deliver and id-less error frames to their handlers, in order, until removed', () => {
    const { router } = routerWithOneRequest();
    const seen: string[] = [];
    const stop = router.onFrame('deliver', (frame) => seen.push(`deliver ${frame.subscriptionId}`));
    router.onFrame('error', (frame) => seen.push(`error ${frame.code}`));
    router.route(bytes({ type: 'deliver', subscriptionId: 3, messages: [deliveredMessage()] }));
    router.route(bytes({ type: 'error', code: 503, message: 'shutting down' }));
    stop();
    router.route(bytes({ type: 'deliver', subscriptionId: 4, messages: [deliveredMessage()] }));
    expect(seen).toEqual(['deliver 3', 'error 503']);
  });

  it('reports a text message and a second welcome, and carries on', async () => {
    const { router, answer, protocolErrors } = routerWithOneRequest();
    router.unreadable('a text message');
    router.route(
      bytes({
        type: 'welcome',
        protocolVersion: PROTOCOL_VERSION,
        sessionId: 's',
        maxBodyBytes: 1,
        maxFrameBytes: 1,
      }),
    );
    expect(protocolErrors.map((error) => error.message)).toEqual([
      'the broker sent a text message',
      'the broker sent a second welcome',
    ]);
    router.route(bytes({ type: 'ok', id: 0 }));
    expect(await answer).toEqual({ answered: { type: 'ok', id: 0 } });
  });

  it('reports an undecodable frame and fails the request it names', async () => {
    const { router, answer, protocolErrors } = routerWithOneRequest();
    router.route(encodeFrame({ type: 'ok', id: 0, extra: new Uint8Array() } as never).subarray(0, 5));
    router.route(encodeFrame({ type: 'sendResult', id: 0, receipts: 'nope' } as never));
    expect(protocolErrors).toHaveLength(2);
    expect(protocolErrors[1]).toMatchObject({ code: 'PROTOCOL_ERROR' });
    expect(await answer).toEqual({ failed: protocolErrors[1] });
  });

  it('reports an answer of the wrong type, which fails its request', async () => {
    const { router, answer, protocolErrors } = routerWithOneRequest();
    router.route(bytes({ type: 'subscribed', id: 0, subscriptionId: 1 }));
    expect(protocolErrors).toHaveLength(1);
    expect(await answer).toEqual({ failed: protocolErrors[0] });
  });

  it('keeps routing when a handler or the protocol error hook throws', () => {
    const requests = new RequestTable();
    const onHandlerError = vi.fn();
    const router = new FrameRouter({
      requests,
      onProtocolError: () => {
        throw new Error('hook bug');
      },
      onHandlerError,
    });
    const later = vi.fn();
    router.onFrame('deliver', () => {
      throw new Error('listener bug');
    });
    router.onFrame('deliver', later);
    router.route(bytes({ type: 'deliver', subscriptionId: 1, messages: [deliveredMessage()] }));
    router.unreadable('a text message');
    expect(onHandlerError.mock.calls).toEqual([[new Error('listener bug')], [new Error('hook bug')]]);
    expect(later).toHaveBeenCalledOnce();
  });
});
