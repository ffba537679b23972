import { WEBSOCKET_PATH } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { ClientError } from './client-error.js';
import { transportFor } from './transports.js';

describe('transportFor', () => {
  it.each([
    ['ws://127.0.0.1:7720', 'ws', `ws://127.0.0.1:7720${WEBSOCKET_PATH}`],
    ['wss://broker.example/', 'ws', `wss://broker.example${WEBSOCKET_PATH}`],
    ['ws://proxy.example/ricochet//', 'ws', `ws://proxy.example/ricochet${WEBSOCKET_PATH}`],
    ['tcp://127.0.0.1:7721', 'tcp', 'tcp://127.0.0.1:7721'],
    ['tls://broker.example:7721/', 'tcp', 'tls://broker.example:7721'],
    ['tcp://[::1]:7721', 'tcp', 'tcp://[::1]:7721'],
    ['http://127.0.0.1:7720', 'http', 'http://127.0.0.1:7720/v1/frames'],
    ['https://proxy.example/ricochet/', 'http', 'https://proxy.example/ricochet/v1/frames'],
  ])('picks the transport of %s by its scheme', (endpoint, name, address) => {
    const transport = transportFor(endpoint);
    expect({ name: transport.name, address: transport.address, stream: transport.stream }).toEqual({
      name,
      address,
      stream: name !== 'http',
    });
  });

  it('refuses what is not a URL of a known scheme with 400', () => {
    expect(() => transportFor('ftp://127.0.0.1:1')).toThrow(
      new ClientError(
        400,
        "endpoint 'ftp://127.0.0.1:1' must start with ws://, wss://, tcp://, tls://, http://, https://",
      ),
    );
    expect(() => transportFor('not a url')).toThrow(/^endpoint 'not a url' is not a URL$/);
  });

  it('refuses a tcp:// endpoint without a port, or with a path', () => {
    expect(() => transportFor('tcp://127.0.0.1')).toThrow(/needs a port/);
    expect(() => transportFor('tcp://127.0.0.1:7721/v1')).toThrow(/takes no path/);
  });

  it('takes the tls option for wss://, tls:// and https:// only, and never with an injected WebSocket', () => {
    expect(() => transportFor('tls://127.0.0.1:1', { tls: { ca: 'pem' } })).not.toThrow();
    expect(() => transportFor('wss://127.0.0.1:1', { tls: { ca: 'pem' } })).not.toThrow();
    expect(() => transportFor('https://127.0.0.1:1', { tls: { ca: 'pem' } })).not.toThrow();
    for (const endpoint of ['ws://127.0.0.1:1', 'tcp://127.0.0.1:1', 'http://127.0.0.1:1']) {
      expect(() => transportFor(endpoint, { tls: {} })).toThrow(
        new ClientError(400, 'the tls option needs a wss://, tls:// or https:// endpoint'),
      );
    }
    const webSocket = class {} as never;
    expect(() => transportFor('wss://127.0.0.1:1', { tls: {}, webSocket })).toThrow(/cannot be combined/);
  });
});
