import { connect } from 'node:net';
import { WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { startTestBroker } from '../broker.test-support.js';

/**
 * A client reconnecting while the broker closes can send its upgrade after the drain, when Fastify
 * answers every request `503` itself. Node has handed that socket to the upgrade listeners, so
 * nothing ended it when the client hung up, and the HTTP server's close, which waits for every
 * socket, never finished: the broker's `close()` hung (seen with clients reconnecting every few ms).
 */
describe('the WebSocket gateway while the broker closes', () => {
  it('ends an upgrade answered 503 once its client hangs up, so the close finishes', {
    timeout: 10_000,
  }, async () => {
    const broker = await startTestBroker();
    const { port } = broker.address as { port: number };
    const server = broker.app.server;
    const serverClose = server.close.bind(server);
    let answered = '';
    // Fastify calls the server's close after marking itself closing: an upgrade made now is in
    // the window a reconnecting client hits.
    server.close = ((callback?: (error?: Error) => void) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('data', (chunk: Buffer) => {
        answered += chunk.toString('latin1');
        if (!answered.includes('\r\n\r\n')) return;
        // The client reads the refusal and hangs up (FIN), as ws's client does; then the server closes.
        socket.end();
        serverClose(callback);
      });
      socket.write(
        `GET ${WEBSOCKET_PATH} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\n` +
          `Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${'a'.repeat(22)}==\r\n` +
          `Sec-WebSocket-Protocol: ${WEBSOCKET_SUBPROTOCOL}\r\n\r\n`,
      );
      return server;
    }) as typeof server.close;
    // Bounded by the test's timeout: without the fix the socket stays half-open and this never resolves.
    await broker.close();
    expect(answered).toMatch(/^HTTP\/1\.1 503 /);
  });
});
