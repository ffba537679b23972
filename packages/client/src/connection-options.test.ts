import { describe, expect, it } from 'vitest';
import { ClientError } from './client-error.js';
import { checkTimeoutMs, connectionOptionsOf } from './connection-options.js';

describe('checkTimeoutMs', () => {
  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses %s with 400', (value) => {
    expect(() => checkTimeoutMs(value, 'timeoutMs')).toThrow(
      new ClientError(400, `timeoutMs must be a positive number, got ${value}`),
    );
  });

  it('accepts any positive number of ms', () => {
    for (const value of [0.5, 1, 30_000]) expect(() => checkTimeoutMs(value, 'timeoutMs')).not.toThrow();
  });
});

describe('connectionOptionsOf', () => {
  it("takes a client's connection options as they are, with the request timeout it settled on", () => {
    const onProtocolError = () => {};
    const options = {
      endpoint: 'ws://127.0.0.1:1',
      token: 'tok',
      clientId: 'worker-1',
      reconnectBackoff: { initialMs: 5 },
      onProtocolError,
      requestTimeoutMs: 1_000,
      group: 'billing',
    };
    expect(connectionOptionsOf(options, 21_000)).toEqual({
      endpoint: 'ws://127.0.0.1:1',
      token: 'tok',
      clientId: 'worker-1',
      reconnectBackoff: { initialMs: 5 },
      onProtocolError,
      requestTimeoutMs: 21_000,
    });
  });

  it('leaves out what the client left out', () => {
    expect(connectionOptionsOf({ endpoint: 'ws://127.0.0.1:1' }, 30_000)).toStrictEqual({
      endpoint: 'ws://127.0.0.1:1',
      requestTimeoutMs: 30_000,
    });
  });
});
