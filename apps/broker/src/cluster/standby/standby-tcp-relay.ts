import { createServer as createNetServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, connect as tlsConnect } from 'node:tls';
import { listenOn } from '../../gateway/listen-on.js';
import type { TlsCredentials } from '../../tls.js';
import { connectToOwner, OWNER_WAIT_MS } from './owner-wait.js';

/** Options of {@link startStandbyTcpRelay}. */
export interface StandbyTcpRelayOptions {
  readonly host: string;
  /** 0 picks a free port; the broker's TCP listener takes the same one once it owns the store. */
  readonly port: number;
  readonly tls?: TlsCredentials;
  /** The owner's `tcp://` or `tls://` URL, or `undefined` while none serves TCP. */
  readonly findOwner: () => Promise<string | undefined>;
  /** How long a connection is held while no owner can be reached, in ms. @default OWNER_WAIT_MS (15 s) */
  readonly ownerWaitMs?: number;
  /** Connections relayed or held at once (the broker's `--max-connections`); past it one is cut at once. @default no limit */
  readonly maxConnections?: number;
}

/** A standby's TCP listener, until it owns the store. */
export interface StandbyTcpRelay {
  readonly port: number;
  /** This broker took the store over: cut every relayed connection and free the port; held ones stay held. */
  stopListening(): Promise<void>;
  /**
   * Give every held connection (a TLS socket past its handshake when TLS is on) to the broker now
   * listening on this port, as if it had just connected to it.
   */
  handOver(accept: (socket: Socket) => void): void;
  /** Cut every relayed and held connection (clients reconnect) and stop listening. */
  close(): Promise<void>;
}

/**
 * The TCP side of a standby (see `standby-relay.ts`): every connection is piped, byte for byte, to
 * the owner's TCP listener, so the owner reads the client's `hello` and everything after it. The
 * streams' own backpressure bounds what is held. While no owner's TCP listener can be reached (a
 * takeover in progress) a new connection is held, unread, for up to `ownerWaitMs`, then closed; the
 * client reconnects. When this broker is the one taking over, {@link StandbyTcpRelay.handOver}
 * gives the held connections to it instead.
 */
export async function startStandbyTcpRelay(options: StandbyTcpRelayOptions): Promise<StandbyTcpRelay> {
  /** Every socket of a relayed connection, client and owner side: cut when this broker takes over. */
  const piped = new Set<Socket>();
  /** Clients waiting for an owner, with nothing read from them yet. */
  const held = new Set<Socket>();
  const openUpstream = (owner: string) =>
    new Promise<Socket | undefined>((resolve) => {
      const target = new URL(owner);
      const port = Number(target.port);
      const tls = target.protocol === 'tls:';
      const upstream = tls
        ? tlsConnect({ host: target.hostname, port, servername: target.hostname })
        : netConnect({ host: target.hostname, port });
      const failed = () => {
        upstream.destroy();
        resolve(undefined);
      };
      // An error between the connect and the relay's own listeners must not go unhandled.
      upstream.on('error', () => {});
      upstream.once('error', failed);
      upstream.once(tls ? 'secureConnect' : 'connect', () => {
        upstream.off('error', failed);
        resolve(upstream);
      });
    });
  const relay = (client: Socket) => {
    // `piped` holds both sockets of each relayed connection.
    if (held.size + piped.size / 2 >= (options.maxConnections ?? Number.POSITIVE_INFINITY)) {
      client.destroy();
      return;
    }
    // Frames are small and each is flushed at once, as the broker's own listener does: Nagle's
    // algorithm would hold them back tens of milliseconds against delayed ACKs.
    client.setNoDelay(true);
    client.pause();
    held.add(client);
    const onError = () => client.destroy();
    client.on('error', onError);
    void connectToOwner({
      findOwner: options.findOwner,
      connect: openUpstream,
      waitMs: options.ownerWaitMs ?? OWNER_WAIT_MS,
      gone: () => !held.has(client) || client.destroyed,
    }).then((upstream) => {
      if (!held.has(client) || client.destroyed || upstream === undefined) {
        upstream?.destroy();
        // Handed over to this broker: it is the broker's connection now.
        if (held.delete(client)) client.destroy();
        return;
      }
      held.delete(client);
      upstream.setNoDelay(true);
      for (const socket of [client, upstream]) {
        piped.add(socket);
        socket.once('close', () => piped.delete(socket));
      }
      upstream.once('close', () => client.destroy());
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
  /** Resolves once the server closed: every connection it accepted ended, held ones included. */
  let serverClosed: Promise<void> | undefined;
  const stopListening = async () => {
    // The listening socket closes at once; the callback waits for every connection to end.
    serverClosed ??= new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of piped) socket.destroy();
  };
  return {
    port,
    stopListening,
    handOver(accept) {
      for (const client of [...held]) {
        held.delete(client);
        client.removeAllListeners('error');
        accept(client);
      }
    },
    async close() {
      await stopListening();
      for (const client of held) client.destroy();
      held.clear();
      await serverClosed;
    },
  };
}
