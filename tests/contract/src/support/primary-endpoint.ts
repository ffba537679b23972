import { createConnection, createServer, type Socket } from 'node:net';

/** One address for a database whose primary moves: {@link startPrimaryEndpoint}. */
export interface PrimaryEndpoint extends AsyncDisposable {
  /** The port on 127.0.0.1 that clients connect to, whichever server is primary. */
  readonly port: number;
  /**
   * From now on, connect new connections to the server on `port`, and cut those still open to the
   * old one: the address has moved, and nothing answers there for them any more.
   */
  switchTo(port: number): void;
  /** Stop listening and cut every connection. */
  close(): Promise<void>;
}

/**
 * An address that follows the primary, as a managed database's DNS name or a floating IP (VIP)
 * does: a TCP proxy on 127.0.0.1, port 0, that pipes each connection to the server on
 * `targetPort`, until the test moves it to the promoted standby ({@link PrimaryEndpoint.switchTo}).
 * A connection whose server cannot be reached is closed, as a connect to a dead address fails.
 */
export async function startPrimaryEndpoint(targetPort: number): Promise<PrimaryEndpoint> {
  let target = targetPort;
  /** Each open pair: the client's socket and the one to the server it was piped to. */
  const pairs = new Set<{ readonly client: Socket; readonly server: Socket; readonly port: number }>();
  const proxy = createServer((client) => {
    const pair = { client, server: createConnection({ host: '127.0.0.1', port: target }), port: target };
    pairs.add(pair);
    const cut = () => {
      pairs.delete(pair);
      client.destroy();
      pair.server.destroy();
    };
    // Either side failing or closing ends both: PostgreSQL's protocol has no half-open use.
    for (const socket of [client, pair.server]) {
      socket.on('error', cut);
      socket.on('close', cut);
    }
    client.pipe(pair.server);
    pair.server.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    proxy.once('error', reject);
    proxy.listen(0, '127.0.0.1', resolve);
  });
  const address = proxy.address();
  if (address === null || typeof address === 'string') throw new Error(`unexpected address ${address}`);
  const close = async () => {
    for (const { client, server } of [...pairs]) {
      client.destroy();
      server.destroy();
    }
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
  };
  return {
    port: address.port,
    switchTo(port) {
      target = port;
      for (const pair of [...pairs]) {
        if (pair.port !== port) pair.client.destroy();
      }
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
