import { createServer as createNetServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, connect as tlsConnect } from 'node:tls';
import type { TlsCredentials } from '../tls.js';
import { listenOn } from './listen-on.js';

/** Options of {@link startStandbyTcpRelay}. */
export interface StandbyTcpRelayOptions {
  readonly host: string;
  /** 0 picks a free port; the broker's TCP listener takes the same one once it owns the store. */
  readonly port: number;
  readonly tls?: TlsCredentials;
  /** The owner's `tcp://` or `tls://` URL, or `undefined` while none serves TCP. */
  readonly findOwner: () => Promise<string | undefined>;
}

/** A standby's TCP listener, until it owns the store. */
export interface StandbyTcpRelay {
  readonly port: number;
  /** Cut every relayed connection (clients reconnect) and stop listening. */
  close(): Promise<void>;
}

/**
 * The TCP side of a standby (see `standby-relay.ts`): every connection is piped, byte for byte, to
 * the owner's TCP listener, so the owner reads the client's `hello` and everything after it. The
 * streams' own backpressure bounds what is held. While no broker serves TCP the connection is
 * closed at once, and the client reconnects.
 */
export async function startStandbyTcpRelay(options: StandbyTcpRelayOptions): Promise<StandbyTcpRelay> {
  const sockets = new Set<Socket>();
  const relay = (client: Socket) => {
    sockets.add(client);
    // Frames are small and each is flushed at once, as the broker's own listener does: Nagle's
    // algorithm would hold them back tens of milliseconds against delayed ACKs.
    client.setNoDelay(true);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    client.pause();
    void options.findOwner().then((owner) => {
      if (client.destroyed) return;
      if (owner === undefined) {
        client.destroy();
        return;
      }
      const target = new URL(owner);
      const port = Number(target.port);
      const upstream =
        target.protocol === 'tls:'
          ? tlsConnect({ host: target.hostname, port, servername: target.hostname })
          : netConnect({ host: target.hostname, port });
      upstream.setNoDelay(true);
      sockets.add(upstream);
      upstream.once('close', () => {
        sockets.delete(upstream);
        client.destroy();
      });
      upstream.on('error', () => upstream.destroy());
      client.once('close', () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  };
  const server: Server = options.tls
    ? createTlsServer({ cert: options.tls.cert, key: options.tls.key }, relay)
    : createNetServer(relay);
  const port = await listenOn(server, options.host, options.port);
  return {
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
