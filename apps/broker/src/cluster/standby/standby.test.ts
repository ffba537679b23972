import { createServer } from 'node:http';
import { WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { resolveBrokerConfig } from '../../config.js';
import { startStandby } from './standby.js';

describe('a broker standing by on a shared store', () => {
  it('never relays to itself: once the lease row names it (it is loading the store), clients wait and are handed to it', async () => {
    let owner: string | undefined;
    let closed = false;
    let lookups = 0;
    let lookedUpTwice: () => void = () => {};
    const waiting = new Promise<void>((resolve) => {
      lookedUpTwice = resolve;
    });
    const standby = await startStandby(
      { ...resolveBrokerConfig({ host: '127.0.0.1', port: 0 }), store: 'postgres://unused/db' },
      {
        find: async () => {
          if (++lookups === 2) lookedUpTwice();
          return owner;
        },
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
      const answered = new Promise<string>((resolve) => {
        client.once('open', () => client.send('hello'));
        client.once('message', (data) => resolve(String(data)));
      });
      // The client is held (the relay looks the owner up again) rather than relayed to itself...
      await waiting;
      // ...until this broker serves on the same port, and is handed the client.
      await standby.stopListening();
      const broker = createServer();
      const sockets = new WebSocketServer({ noServer: true, handleProtocols: () => WEBSOCKET_SUBPROTOCOL });
      broker.on('upgrade', (request, socket, head) =>
        sockets.handleUpgrade(request, socket, head, (ws) =>
          ws.on('message', () => ws.send('from the broker')),
        ),
      );
      await new Promise<void>((resolve) => broker.listen(standby.config.port, '127.0.0.1', () => resolve()));
      try {
        await standby.handOver({
          adopt: {
            upgrade: (request, socket, head) => broker.emit('upgrade', request, socket, head),
            request: (request, response) => broker.emit('request', request, response),
            tcp: (socket) => socket.destroy(),
          },
        });
        expect(await answered).toBe('from the broker');
      } finally {
        client.terminate();
        for (const ws of sockets.clients) ws.terminate();
        await new Promise((resolve) => broker.close(resolve));
      }
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
