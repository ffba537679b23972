import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ERROR_CODES, WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import { CLOSE_CODES } from '../../gateway/close-codes.js';
import { listenOn } from '../../gateway/listen-on.js';
import type { TlsCredentials } from '../../tls.js';
import { connectToOwner, OWNER_WAIT_MS } from './owner-wait.js';
import { forwardHttp, openForwardRequest, STANDBY_OWN_PATHS } from './standby-http-forward.js';

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
  /** How long a client is held while no owner can be reached, in ms. @default OWNER_WAIT_MS (15 s) */
  readonly ownerWaitMs?: number;
  /**
   * Clients relayed or held at once (the broker's `--max-connections`); past it an upgrade is
   * answered `503`, as the broker answers it. @default no limit
   */
  readonly maxConnections?: number;
}

/** How the broker taking a relay's port over accepts what the relay held (`Broker.adopt`). */
export interface HeldClientAcceptor {
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  request(request: IncomingMessage, response: ServerResponse): void;
}

/** A standby broker's listener, until it owns the store. */
export interface StandbyRelay {
  readonly port: number;
  /** `ws://host:port` (`wss://` with TLS): where clients reach this broker. */
  readonly url: string;
  /**
   * This broker took the store over: tell every relayed client to reconnect (to this broker) and
   * free the port for the broker to listen on. Upgrades held while no owner could be reached stay
   * held, for {@link handOver}.
   */
  stopListening(): Promise<void>;
  /**
   * Give every held upgrade and HTTP request to the broker now listening on this port (`accept`:
   * its HTTP server's `upgrade` and `request` handling), as if the client had just sent it there.
   */
  handOver(accept: HeldClientAcceptor): void;
  /** Stop listening, and close every relayed connection and held upgrade (clients reconnect). */
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

/** A client's WebSocket upgrade, held (not answered yet) while no owner can be reached. */
interface HeldUpgrade {
  readonly request: IncomingMessage;
  readonly socket: Duplex;
  readonly head: Buffer;
  /** Handed over to this broker, which now owns the store: the relay lets go of it. */
  taken: boolean;
}

/** An HTTP request (the admin API, the HTTP transport) held like an upgrade, its body unread. */
interface HeldRequest {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  /** Handed over to this broker, which now owns the store: the relay lets go of it. */
  taken: boolean;
}

/** Answer 503 with a JSON body, for a client to try again a moment later. */
function answerUnavailable(response: ServerResponse, body: object): void {
  response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
  response.end(JSON.stringify(body));
}

/** A client relayed to the owner. */
interface RelayedPair {
  readonly client: WebSocket;
  readonly upstream: WebSocket;
}

/**
 * What a broker on a shared PostgreSQL store does while another owns it: it listens on its port and
 * relays every WebSocket client to the owner (DESIGN.md §9: any broker accepts any client), frame
 * for frame and untouched, so the owner authenticates, validates and answers as for a direct
 * client. Other HTTP requests (the admin API, the HTTP transport) are forwarded to the owner
 * (`standby-http-forward.ts`), but `GET /healthz` and `/metrics` describe this process: 503
 * `standby`, so a load balancer sends clients to the owner and a scrape counts nothing twice.
 *
 * The owner's connection is opened before the client's upgrade is answered. While no owner can
 * be reached (a takeover in progress) the upgrade waits, for up to `ownerWaitMs`, and goes through
 * as soon as one answers; after that it is answered and closed with 1013, and the client
 * reconnects. Other HTTP requests wait the same way, their bodies unread, and are answered 503
 * after the wait. When this broker is the one taking over, {@link StandbyRelay.handOver} gives the
 * waiting upgrades and requests to it instead.
 *
 * TCP clients have a relay of their own (`standby-tcp-relay.ts`).
 */
export async function startStandbyRelay(options: StandbyRelayOptions): Promise<StandbyRelay> {
  const pairs = new Set<RelayedPair>();
  const held = new Set<HeldUpgrade>();
  const heldRequests = new Set<HeldRequest>();
  /** Connections with a request being forwarded to the owner: cut off when the relay stops listening. */
  const forwarding = new Set<Socket>();
  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxFrameBytes,
    // As the broker's own endpoint: only a client offering `ricochet.v1` is relayed (and told so).
    handleProtocols: (protocols) => (protocols.has(WEBSOCKET_SUBPROTOCOL) ? WEBSOCKET_SUBPROTOCOL : false),
  });
  const answerHttp = (request: IncomingMessage, response: ServerResponse) => {
    const path = new URL(request.url ?? '/', 'http://relay').pathname;
    if (STANDBY_OWN_PATHS.has(path)) {
      void options
        .findOwner()
        .then((owner) => answerUnavailable(response, { status: 'standby', owner: owner ?? null }));
      return;
    }
    // Held like an upgrade while no owner can be reached, its body unread until one answers.
    const exchange: HeldRequest = { request, response, taken: false };
    heldRequests.add(exchange);
    const gone = () => exchange.taken || request.socket.destroyed;
    let lastOwner: string | undefined;
    void connectToOwner({
      findOwner: async () => {
        lastOwner = await options.findOwner();
        return lastOwner;
      },
      connect: (owner) => openForwardRequest(request, owner),
      waitMs: options.ownerWaitMs ?? OWNER_WAIT_MS,
      gone,
    }).then((opened) => {
      heldRequests.delete(exchange);
      if (gone()) {
        opened?.upstream.destroy();
        return;
      }
      const unavailable = () =>
        answerUnavailable(response, {
          code: 503,
          message: `this broker is a standby: ${lastOwner === undefined ? 'no broker owns the store right now' : `the store's owner at ${lastOwner} cannot be reached`}`,
        });
      if (opened === undefined) {
        unavailable();
        return;
      }
      forwarding.add(request.socket);
      response.once('close', () => forwarding.delete(request.socket));
      forwardHttp(request, response, opened, unavailable);
    });
  };
  const server: Server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, answerHttp)
    : createHttpServer(answerHttp);

  const openUpstream = (owner: string) =>
    new Promise<WebSocket | undefined>((resolve) => {
      const upstream = new WebSocket(`${owner.replace(/\/+$/, '')}${WEBSOCKET_PATH}`, WEBSOCKET_SUBPROTOCOL, {
        maxPayload: options.maxFrameBytes,
      });
      const failed = () => {
        upstream.terminate();
        resolve(undefined);
      };
      // An error between the open and the relay's own listeners must not go unhandled.
      upstream.on('error', () => {});
      upstream.once('error', failed);
      upstream.once('open', () => {
        upstream.off('error', failed);
        resolve(upstream);
      });
    });

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
    if (held.size + pairs.size >= (options.maxConnections ?? Number.POSITIVE_INFINITY)) {
      const body = JSON.stringify({
        error: {
          code: ERROR_CODES.BROKER_UNAVAILABLE.code,
          name: 'BROKER_UNAVAILABLE',
          message: `the broker relays ${options.maxConnections} connections (maxConnections)`,
        },
      });
      socket.end(
        `HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      return;
    }
    const upgrade: HeldUpgrade = { request, socket, head, taken: false };
    held.add(upgrade);
    socket.on('error', () => socket.destroy());
    void connectToOwner({
      findOwner: options.findOwner,
      connect: openUpstream,
      waitMs: options.ownerWaitMs ?? OWNER_WAIT_MS,
      gone: () => upgrade.taken || socket.destroyed,
    }).then((upstream) => {
      held.delete(upgrade);
      if (upgrade.taken || socket.destroyed) {
        upstream?.close(CLOSE_CODES.normalClosure);
        return;
      }
      sockets.handleUpgrade(request, socket, head, (client) => {
        if (upstream === undefined) {
          client.close(CLOSE_CODES.tryAgainLater, 'no broker owns the store right now: reconnect');
          return;
        }
        relay(client, upstream);
      });
    });
  });

  const relay = (client: WebSocket, upstream: WebSocket) => {
    if (upstream.readyState !== WebSocket.OPEN) {
      // The owner went away between its open and the client's upgrade.
      client.close(CLOSE_CODES.tryAgainLater, 'the store owner could not be reached: reconnect');
      return;
    }
    const pair: RelayedPair = { client, upstream };
    pairs.add(pair);
    client.on('message', (data, binary) => {
      if (upstream.readyState === WebSocket.OPEN) forward(client, upstream, data, binary);
    });
    client.on('close', () => {
      pairs.delete(pair);
      upstream.close(CLOSE_CODES.normalClosure);
    });
    client.on('error', () => client.terminate());
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
  };

  /** Resolves once the server closed: every connection it accepted ended, held upgrades included. */
  let serverClosed: Promise<void> | undefined;

  /** Tell relayed clients to reconnect, and stop listening (the upgrades still held stay held). */
  const stopListening = async () => {
    for (const pair of pairs) {
      pair.client.resume(); // to read its answer to the close
      pair.client.close(CLOSE_CODES.tryAgainLater, 'this broker now owns the store: reconnect');
      pair.upstream.close(CLOSE_CODES.normalClosure);
    }
    if (serverClosed) return;
    // The listening socket closes at once; the callback waits for every connection to end.
    serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Not closeAllConnections: the requests held for an owner stay open, for handOver.
    server.closeIdleConnections();
    for (const socket of forwarding) socket.destroy();
    // Clients get a moment to answer the close handshake, then are cut off.
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
  };

  const port = await listenOn(server, options.host, options.port);
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    port,
    url: `${options.tls ? 'wss' : 'ws'}://${host}:${port}`,
    stopListening,
    handOver(accept) {
      for (const upgrade of held) {
        upgrade.taken = true;
        accept.upgrade(upgrade.request, upgrade.socket, upgrade.head);
      }
      held.clear();
      for (const exchange of heldRequests) {
        exchange.taken = true;
        // The connection is still parsed by the relay's server: closed after this answer, the
        // client's next request opens one to the broker itself.
        exchange.response.shouldKeepAlive = false;
        accept.request(exchange.request, exchange.response);
      }
      heldRequests.clear();
    },
    async close() {
      await stopListening();
      for (const upgrade of held) {
        upgrade.taken = true;
        upgrade.socket.destroy();
      }
      held.clear();
      for (const exchange of heldRequests) {
        exchange.taken = true;
        exchange.request.socket.destroy();
      }
      heldRequests.clear();
      await serverClosed;
    },
  };
}
