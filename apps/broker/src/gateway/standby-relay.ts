import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import type { TlsCredentials } from '../tls.js';
import { CLOSE_CODES } from './close-codes.js';
import { listenOn } from './listen-on.js';
import { forwardHttp, STANDBY_OWN_PATHS } from './standby-http-forward.js';

/** Options of {@link startStandbyRelay}. */
export interface StandbyRelayOptions {
  readonly host: string;
  /** 0 picks a free port; the broker listens on the same one once it owns the store. */
  readonly port: number;
  readonly tls?: TlsCredentials;
  /** Frames larger than this close the relayed connection, as the broker itself would. */
  readonly maxFrameBytes: number;
  /** The owner's WebSocket URL, or `undefined` while no broker owns the store. */
  readonly findOwner: () => Promise<string | undefined>;
}

/** A standby broker's listener, until it owns the store. */
export interface StandbyRelay {
  readonly port: number;
  /** `ws://host:port` (`wss://` with TLS): where clients reach this broker. */
  readonly url: string;
  /** Close every relayed connection (clients reconnect, to this broker once it serves) and stop listening. */
  close(): Promise<void>;
}

/** Above this many bytes waiting to be written to one side, the relay stops reading the other. */
const HIGH_WATER_BYTES = 4 * 1024 * 1024;

/**
 * Send `data` on to `to`; while `to` has more than {@link HIGH_WATER_BYTES} waiting, stop reading
 * `from`, and read it again once `to` has written its backlog down to half of that. So a relay
 * between a fast peer and a slow one holds a bounded buffer, and TCP slows the fast one.
 */
function forward(from: WebSocket, to: WebSocket, data: RawData, binary: boolean): void {
  to.send(data, { binary }, () => {
    if (from.isPaused && to.bufferedAmount <= HIGH_WATER_BYTES / 2) from.resume();
  });
  if (to.bufferedAmount > HIGH_WATER_BYTES) from.pause();
}

/** How long clients have to answer the close when the relay stops. */
const CLOSE_HANDSHAKE_MS = 250;

/** WebSocket close codes a peer may not send on the wire (RFC 6455 §7.4.1): replaced when relayed. */
const RESERVED_CLOSE_CODES = new Set([1005, 1006, 1015]);

/**
 * What a broker on a shared PostgreSQL store does while another owns it: it listens on its port and
 * relays every WebSocket client to the owner (DESIGN.md §9: any broker accepts any client), frame
 * for frame and untouched, so the owner authenticates, validates and answers as for a direct
 * client. While no broker owns the store (a takeover in progress) a client is closed with 1013, and
 * reconnects. Other HTTP requests (the admin API, the HTTP transport) are forwarded to the owner
 * (`standby-http-forward.ts`), but `GET /healthz` and `/metrics` describe this process: 503
 * `standby`, so a load balancer sends clients to the owner and a scrape counts nothing twice.
 *
 * Not relayed: the TCP listener, which opens when this broker owns the store.
 */
export async function startStandbyRelay(options: StandbyRelayOptions): Promise<StandbyRelay> {
  const pairs = new Set<{ readonly client: WebSocket; upstream: WebSocket | undefined }>();
  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxFrameBytes,
    // As the broker's own endpoint: only a client offering `ricochet.v1` is relayed (and told so).
    handleProtocols: (protocols) => (protocols.has(WEBSOCKET_SUBPROTOCOL) ? WEBSOCKET_SUBPROTOCOL : false),
  });
  const answerHttp = (request: IncomingMessage, response: ServerResponse) => {
    void options.findOwner().then((owner) => {
      const path = new URL(request.url ?? '/', 'http://relay').pathname;
      const unavailable = () => {
        const body = STANDBY_OWN_PATHS.has(path)
          ? { status: 'standby', owner: owner ?? null }
          : {
              code: 503,
              message: `this broker is a standby: ${owner === undefined ? 'no broker owns the store right now' : `the store's owner at ${owner} cannot be reached`}`,
            };
        response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
        response.end(JSON.stringify(body));
      };
      if (owner === undefined || STANDBY_OWN_PATHS.has(path)) unavailable();
      else forwardHttp(request, response, owner, unavailable);
    });
  };
  const server: Server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, answerHttp)
    : createHttpServer(answerHttp);
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (new URL(request.url ?? '/', 'http://relay').pathname !== WEBSOCKET_PATH) {
      socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
      return;
    }
    const offered = String(request.headers['sec-websocket-protocol'] ?? '').split(',');
    if (!offered.some((name) => name.trim() === WEBSOCKET_SUBPROTOCOL)) {
      socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      return;
    }
    sockets.handleUpgrade(request, socket, head, (client) => relay(client));
  });

  const relay = (client: WebSocket) => {
    const pair: { readonly client: WebSocket; upstream: WebSocket | undefined } = {
      client,
      upstream: undefined,
    };
    pairs.add(pair);
    // Nothing more is read from the client until the owner's connection is open; what was already
    // read (its `hello`, mostly) waits here.
    const early: { data: RawData; binary: boolean }[] = [];
    client.pause();
    client.on('message', (data, binary) => {
      if (pair.upstream?.readyState === WebSocket.OPEN) forward(client, pair.upstream, data, binary);
      else early.push({ data, binary });
    });
    client.on('close', () => {
      pairs.delete(pair);
      pair.upstream?.close(CLOSE_CODES.normalClosure);
    });
    client.on('error', () => client.terminate());
    void options.findOwner().then((owner) => {
      if (client.readyState !== WebSocket.OPEN) return;
      if (owner === undefined) {
        client.resume(); // to read its answer to the close
        client.close(CLOSE_CODES.tryAgainLater, 'no broker owns the store right now: reconnect');
        return;
      }
      const upstream = new WebSocket(`${owner.replace(/\/+$/, '')}${WEBSOCKET_PATH}`, WEBSOCKET_SUBPROTOCOL, {
        maxPayload: options.maxFrameBytes,
      });
      pair.upstream = upstream;
      upstream.on('open', () => {
        for (const { data, binary } of early.splice(0)) forward(client, upstream, data, binary);
        // Unless the early frames already filled the owner's side: its send callbacks resume then.
        if (upstream.bufferedAmount <= HIGH_WATER_BYTES) client.resume();
      });
      upstream.on('message', (data, binary) => {
        if (client.readyState === WebSocket.OPEN) forward(upstream, client, data, binary);
      });
      upstream.on('close', (code, reason) => {
        const relayed = RESERVED_CLOSE_CODES.has(code) ? CLOSE_CODES.tryAgainLater : code;
        client.resume(); // to read its answer to the close
        if (client.readyState === WebSocket.OPEN) client.close(relayed, reason);
      });
      upstream.on('error', () => {
        client.resume();
        if (client.readyState === WebSocket.OPEN)
          client.close(CLOSE_CODES.tryAgainLater, 'the store owner could not be reached: reconnect');
        upstream.terminate();
      });
    });
  };

  const port = await listenOn(server, options.host, options.port);
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    port,
    url: `${options.tls ? 'wss' : 'ws'}://${host}:${port}`,
    async close() {
      for (const pair of pairs) {
        pair.client.resume(); // to read its answer to the close
        pair.client.close(CLOSE_CODES.tryAgainLater, 'this broker now owns the store: reconnect');
        pair.upstream?.close(CLOSE_CODES.normalClosure);
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      // Clients get a moment to answer the close handshake, then are cut off: the port must be free.
      const handshakes = [...sockets.clients].map(
        (client) => new Promise<void>((resolve) => client.once('close', () => resolve())),
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(handshakes),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, CLOSE_HANDSHAKE_MS);
        }),
      ]);
      clearTimeout(timer);
      for (const client of sockets.clients) client.terminate();
      sockets.close();
      await closed;
    },
  };
}
