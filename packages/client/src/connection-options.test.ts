import { WEBSOCKET_PATH } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { ClientError } from './client-error.js';
import { checkTimeoutMs, connectionOptionsOf, webSocketUrl } from './connection-options.js';

describe('webSocketUrl', () => {
  it.each([
    ['ws://127.0.0.1:7720', `ws://127.0.0.1:7720${WEBSOCKET_PATH}`],
    ['wss://broker.example/', `wss://broker.example${WEBSOCKET_PATH}`],
    ['ws://proxy.example/ricochet//', `ws://proxy.example/ricochet${WEBSOCKET_PATH}`],
  ])('opens %s at %s, keeping a path prefix', (endpoint, url) => {
    expect(webSocketUrl(endpoint)).toBe(url);
  });

  it('refuses what is not a ws:// or wss:// URL with 400', () => {
    expect(() => webSocketUrl('http://127.0.0.1:1')).toThrow(
      new ClientError(400, "endpoint 'http://127.0.0.1:1' must start with ws:// or wss://"),
    );
    expect(() => webSocketUrl('not a url')).toThrow(/^endpoint 'not a url' is not a URL$/);
  });
});

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
