import { WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { resolveBrokerConfig } from './config.js';
import { startStandby } from './standby.js';

describe('a broker standing by on a shared store', () => {
  it('never relays to itself: once the lease row names it (it is loading the store), clients are told to come back', async () => {
    let owner: string | undefined;
    let closed = false;
    const standby = await startStandby(
      { ...resolveBrokerConfig({ host: '127.0.0.1', port: 0 }), store: 'postgres://unused/db' },
      {
        find: async () => owner,
        findTcp: async () => undefined,
        close: async () => {
          closed = true;
        },
      },
    );
    try {
      expect(standby.config.advertiseUrl).toBe(standby.relay.url);
      expect(standby.config.port).toBe(standby.relay.port);
      // This broker took the lease: the row now advertises its own URL.
      owner = standby.relay.url;
      const client = new WebSocket(`${standby.relay.url}/v1/ws`, WEBSOCKET_SUBPROTOCOL);
      const close = await new Promise<{ code: number; reason: string }>((resolve) =>
        client.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
      );
      expect(close).toEqual({ code: 1013, reason: expect.stringMatching(/no broker owns the store/) });
    } finally {
      await standby.close();
    }
    expect(closed).toBe(true);
  });

  it('with a TCP port, listens on it too, and advertises it on the host clients reach it by', async () => {
    const standby = await startStandby(
      {
        ...resolveBrokerConfig({
          host: '127.0.0.1',
          port: 0,
          tcpPort: 0,
          advertiseUrl: 'ws://broker-b.internal:7720',
        }),
        store: 'postgres://unused/db',
      },
      { find: async () => undefined, findTcp: async () => undefined, close: async () => {} },
    );
    try {
      const port = standby.config.tcpPort;
      expect(port).toBeGreaterThan(0);
      expect(standby.tcpUrl).toBe(`tcp://127.0.0.1:${port}`);
      expect(standby.config.advertiseTcpUrl).toBe(`tcp://broker-b.internal:${port}`);
    } finally {
      await standby.close();
    }
  });
});
