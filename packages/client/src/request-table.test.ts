import {
  BrokerError,
  type BrokerFrame,
  type ClientRequestFrame,
  decodeClientFrame,
  type RicochetError,
} from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ClientError } from './client-error.js';
import { type RequestFrameInput, RequestTable } from './request-table.js';
import type { FrameLink } from './transport.js';

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/** A socket that decodes and keeps what it is sent, or throws when `broken`. */
function recordingSocket(broken = false): { socket: Pick<FrameLink, 'send'>; written: ClientRequestFrame[] } {
  const written: ClientRequestFrame[] = [];
  const socket = {
    send(data: Uint8Array) {
      if (broken) throw new Error('socket is closing');
      const decoded = decodeClientFrame(data);
      if (!decoded.ok || decoded.frame.type === 'hello' || decoded.frame.type === 'credit') {
        throw new Error('not a request frame');
      }
      written.push(decoded.frame);
    },
  } as unknown as Pick<FrameLink, 'send'>;
  return { socket, written };
}

const unsubscribe = (subscriptionId: number): RequestFrameInput => ({ type: 'unsubscribe', subscriptionId });
const ok = (id: number): BrokerFrame => ({ type: 'ok', id });

/** How `promise` settled, once it has. */
async function outcome(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ rejected: error }),
  );
}

describe('RequestTable', () => {
  it('writes at once to an open session, with ids from 0, and resolves with the answer', async () => {
    const table = new RequestTable();
    const { socket, written } = recordingSocket();
    const first = table.add(unsubscribe(7), 1_000, undefined, socket);
    const second = table.add(unsubscribe(8), 1_000, undefined, socket);
    expect(written).toEqual([
      { type: 'unsubscribe', id: 0, subscriptionId: 7 },
      { type: 'unsubscribe', id: 1, subscriptionId: 8 },
    ]);
    expect(table.inflightCount).toBe(2);
    expect(table.answer(1, ok(1))).toBeUndefined();
    expect(table.answer(0, ok(0))).toBeUndefined();
    await expect(first).resolves.toEqual(ok(0));
    await expect(second).resolves.toEqual(ok(1));
    expect(table.inflightCount).toBe(0);
  });

  it('queues without a session and writes the queue in call order to the next one', () => {
    const table = new RequestTable();
    void table.add(unsubscribe(1), 1_000, undefined, undefined);
    void table.add(unsubscribe(2), 1_000, undefined, undefined);
    expect(table.inflightCount).toBe(0);
    const { socket, written } = recordingSocket();
    table.writeQueued(socket);
    expect(written.map((frame) => frame.type === 'unsubscribe' && frame.subscriptionId)).toEqual([1, 2]);
    expect(table.inflightCount).toBe(2);
    table.writeQueued(socket);
    expect(written).toHaveLength(2);
  });

  it('rejects with the BrokerError of an error answer', async () => {
    const table = new RequestTable();
    const answer = table.add(unsubscribe(1), 1_000, undefined, recordingSocket().socket);
    table.answer(0, { type: 'error', id: 0, code: 404, message: 'no such subscription' });
    const settled = (await outcome(answer)) as { rejected: RicochetError };
    expect(settled.rejected).toBeInstanceOf(BrokerError);
    expect(settled.rejected).toMatchObject({ code: 404, message: 'no such subscription' });
  });

  it('fails a request answered with the wrong frame type, and returns that error to report', async () => {
    const table = new RequestTable();
    const answer = table.add(unsubscribe(1), 1_000, undefined, recordingSocket().socket);
    const mismatch = table.answer(0, { type: 'subscribed', id: 0, subscriptionId: 3 });
    expect(mismatch).toMatchObject({
      code: 'PROTOCOL_ERROR',
      message: 'the broker answered unsubscribe with subscribed, not ok',
    });
    expect(await outcome(answer)).toEqual({ rejected: mismatch });
  });

  it('drops an answer nobody waits for', () => {
    const table = new RequestTable();
    expect(table.answer(42, ok(42))).toBeUndefined();
  });

  it('times out after timeoutMs counted from the call, queued time included, and ignores a late answer', async () => {
    const table = new RequestTable();
    const answer = outcome(table.add(unsubscribe(1), 100, undefined, undefined));
    await vi.advanceTimersByTimeAsync(60);
    const { socket } = recordingSocket();
    table.writeQueued(socket);
    await vi.advanceTimersByTimeAsync(40);
    const settled = (await answer) as { rejected: RicochetError };
    expect(settled.rejected).toBeInstanceOf(ClientError);
    expect(settled.rejected).toMatchObject({
      code: 'TIMEOUT',
      retryable: true,
      message: 'no answer to the unsubscribe request within 100 ms',
    });
    expect(table.inflightCount).toBe(0);
    expect(table.answer(0, ok(0))).toBeUndefined();
  });

  it('fails with ABORTED when the signal fires, and never writes an aborted queued request', async () => {
    const table = new RequestTable();
    const controller = new AbortController();
    const answer = outcome(table.add(unsubscribe(1), 1_000, controller.signal, undefined));
    controller.abort(new Error('gave up'));
    expect(await answer).toEqual({
      rejected: expect.objectContaining({ code: 'ABORTED', cause: new Error('gave up') }),
    });
    const { socket, written } = recordingSocket();
    table.writeQueued(socket);
    expect(written).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fails with CONNECTION_CLOSED when the socket cannot take the frame', async () => {
    const table = new RequestTable();
    const answer = outcome(table.add(unsubscribe(1), 1_000, undefined, recordingSocket(true).socket));
    expect(await answer).toEqual({
      rejected: expect.objectContaining({
        code: 'CONNECTION_CLOSED',
        message: 'the frame could not be written',
      }),
    });
    expect(table.inflightCount).toBe(0);
  });

  it('fails one in-flight request by id, all of them, or every queued one', async () => {
    const table = new RequestTable();
    const { socket } = recordingSocket();
    const named = outcome(table.add(unsubscribe(1), 1_000, undefined, socket));
    const inflight = outcome(table.add(unsubscribe(2), 1_000, undefined, socket));
    const queued = outcome(table.add(unsubscribe(3), 1_000, undefined, undefined));
    const undecodable = new ClientError('PROTOCOL_ERROR', 'undecodable');
    table.failInflight(0, undecodable);
    const dropped = new ClientError('CONNECTION_CLOSED', 'dropped');
    table.failAllInflight(dropped);
    const closed = new ClientError('CLIENT_CLOSED', 'closed');
    table.failAllQueued(closed);
    expect(await Promise.all([named, inflight, queued])).toEqual([
      { rejected: undecodable },
      { rejected: dropped },
      { rejected: closed },
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('tells when the last in-flight request settles', async () => {
    const table = new RequestTable();
    await table.whenDrained();
    const { socket } = recordingSocket();
    void table.add(unsubscribe(1), 1_000, undefined, socket);
    void table.add(unsubscribe(2), 1_000, undefined, socket);
    let drained = false;
    void table.whenDrained().then(() => (drained = true));
    table.answer(0, ok(0));
    await Promise.resolve();
    expect(drained).toBe(false);
    table.answer(1, ok(1));
    await Promise.resolve();
    expect(drained).toBe(true);
  });
});
