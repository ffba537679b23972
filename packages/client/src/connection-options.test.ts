import { describe, expect, it } from 'vitest';
import { ClientError } from './client-error.js';
import { checkTimeoutMs, connectionOptionsOf, endpointsOf } from './connection-options.js';

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

describe('endpointsOf', () => {
  it('makes a list of one of a single endpoint, and copies a list in its order', () => {
    expect(endpointsOf('ws://a:1')).toEqual(['ws://a:1']);
    const list = ['tcp://b:2', 'ws://a:1'];
    const endpoints = endpointsOf(list);
    expect(endpoints).toEqual(['tcp://b:2', 'ws://a:1']);
    expect(endpoints).not.toBe(list);
  });

  it('refuses an empty list with 400', () => {
    expect(() => endpointsOf([])).toThrow(
      new ClientError(400, 'endpoint is an empty list: give at least one broker endpoint'),
    );
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

  it('passes a list of endpoints through', () => {
    const endpoint = ['ws://127.0.0.1:1', 'tcp://127.0.0.1:2'];
    expect(connectionOptionsOf({ endpoint }, 30_000)).toStrictEqual({ endpoint, requestTimeoutMs: 30_000 });
  });

  it('leaves out what the client left out', () => {
    expect(connectionOptionsOf({ endpoint: 'ws://127.0.0.1:1' }, 30_000)).toStrictEqual({
      endpoint: 'ws://127.0.0.1:1',
      requestTimeoutMs: 30_000,
    });
  });
});
