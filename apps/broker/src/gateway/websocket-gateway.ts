import type { Duplex } from 'node:stream';
import websocket from '@fastify/websocket';
import { ERROR_CODES, WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import type { AccessControl } from '../auth/access-control.js';
import type { MessagingService } from '../engine/index.js';
import { CLOSE_CODES } from './close-codes.js';
import type { ConnectionLimits } from './connection-limits.js';
import { watchMessageDeadline } from './message-deadline.js';
import type { PeerAccess } from './peer-access.js';
import { logWebSocketError } from './protocol-violations.js';
import type { QueueMapFeeds } from './queue-map-feed.js';
import { Session } from './session.js';
import { WebSocketChannel } from './websocket-channel.js';

export interface GatewayOptions {
  readonly engine: MessagingService;
  readonly access: AccessControl;
  readonly helloTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly maxFrameBytes: number;
  readonly accepting: () => boolean;
  readonly limits: ConnectionLimits;
  /** How long one WebSocket message may take from its first byte to its last. */
  readonly websocketMessageTimeoutMs: number;
  /** Sessions between brokers (`peer-access.ts`), on WebSocket and TCP; none without it. */
  readonly peers?: PeerAccess | undefined;
  /** With queues spread over brokers: the queue map, told to WebSocket and TCP clients that ask for it. */
  readonly queueMaps?: QueueMapFeeds | undefined;
}

/** The live sessions of a gateway, for draining. */
export interface Gateway {
  readonly sessions: ReadonlySet<Session>;
}

/**
 * Mount the WebSocket endpoint at `/v1/ws`. The upgrade is refused with `400` unless the client
 * offers the `ricochet.v1` subprotocol, so a peer speaking another protocol never gets a session.
 */
export async function registerGateway(app: FastifyInstance, options: GatewayOptions): Promise<Gateway> {
  const sessions = new Set<Session>();
  // An upgrade Fastify answers itself (its 503 while the broker closes, after the drain) is left
  // with no owner: Node handed the socket over, and nothing ends it when the client hangs up, so
  // the server's close would wait for it for ever. End our side when the client ends its own (ws
  // does the same for the sockets it owns, so for those this changes nothing).
  app.server.on('upgrade', (_request, socket: Duplex) => socket.once('end', () => socket.end()));
  await app.register(websocket, {
    options: {
      maxPayload: options.maxFrameBytes,
      handleProtocols: (protocols) => (protocols.has(WEBSOCKET_SUBPROTOCOL) ? WEBSOCKET_SUBPROTOCOL : false),
    },
    // ws closes the connection (1009 for an oversized frame, 1002 for a broken one) and then reports
    // the error here: one warning without a stack trace, since the client is at fault, not the broker.
    errorHandler: (error, socket, request) => {
      if (logWebSocketError(error, request.log, options.limits) === 'terminate') socket.terminate();
    },
    // Sessions are closed by the broker's drain, with a going-away code; this only catches stragglers.
    preClose(done) {
      for (const session of sessions) session.close(CLOSE_CODES.goingAway);
      done();
    },
  });
  app.route({
    method: 'GET',
    url: WEBSOCKET_PATH,
    websocket: true,
    preValidation: async (request, reply) => {
      const offered = String(request.headers['sec-websocket-protocol'] ?? '')
        .split(',')
        .map((name) => name.trim());
      if (!offered.includes(WEBSOCKET_SUBPROTOCOL)) {
        await reply.code(400).send({
          error: {
            code: ERROR_CODES.BAD_REQUEST.code,
            name: 'BAD_REQUEST',
            message: `offer the WebSocket subprotocol "${WEBSOCKET_SUBPROTOCOL}"`,
          },
        });
        return;
      }
      if (!options.limits.admitConnection(request.raw.socket)) {
        await reply.code(503).send({
          error: {
            code: ERROR_CODES.BROKER_UNAVAILABLE.code,
            name: 'BROKER_UNAVAILABLE',
            message: `the broker has ${options.limits.caps.maxConnections} connections open (maxConnections)`,
          },
        });
      }
    },
    handler: (socket, request) => {
      const session = new Session(new WebSocketChannel(socket, request.raw.socket, request.log), {
        engine: options.engine,
        log: request.log,
        access: options.access,
        helloTimeoutMs: options.helloTimeoutMs,
        maxBodyBytes: options.maxBodyBytes,
        maxFrameBytes: options.maxFrameBytes,
        accepting: options.accepting,
        limits: options.limits,
        peers: options.peers,
        queueMap: options.queueMaps?.feed('webSocket'),
      });
      watchMessageDeadline(request.raw.socket, options.websocketMessageTimeoutMs, () => {
        options.limits.rejected('websocketMessageTimeoutMs');
        request.log.warn(
          { session: session.id, timeoutMs: options.websocketMessageTimeoutMs },
          'client did not finish a WebSocket message in time; closing',
        );
        session.close(
          CLOSE_CODES.policyViolation,
          `message not finished within ${options.websocketMessageTimeoutMs} ms`,
        );
        terminateIfStillOpen(socket);
      });
      sessions.add(session);
      socket.on('close', () => sessions.delete(session));
    },
  });
  return { sessions };
}

/** A client stuck mid-message cannot answer the close handshake: cut the TCP connection soon after. */
const TERMINATE_AFTER_CLOSE_MS = 1_000;

function terminateIfStillOpen(socket: WebSocket): void {
  const timer = setTimeout(() => socket.terminate(), TERMINATE_AFTER_CLOSE_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
