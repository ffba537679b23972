import websocket from '@fastify/websocket';
import { ERROR_CODES, WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import type { FastifyInstance } from 'fastify';
import type { AccessControl } from '../auth/access-control.js';
import type { BrokerEngine } from '../engine/broker-engine.js';
import { CLOSE_CODES } from './close-codes.js';
import { Session } from './session.js';

export interface GatewayOptions {
  readonly engine: BrokerEngine;
  readonly access: AccessControl;
  readonly helloTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly maxFrameBytes: number;
  readonly accepting: () => boolean;
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
  await app.register(websocket, {
    options: {
      maxPayload: options.maxFrameBytes,
      handleProtocols: (protocols) => (protocols.has(WEBSOCKET_SUBPROTOCOL) ? WEBSOCKET_SUBPROTOCOL : false),
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
      }
    },
    handler: (socket, request) => {
      const session = new Session(socket, {
        engine: options.engine,
        log: request.log,
        access: options.access,
        helloTimeoutMs: options.helloTimeoutMs,
        maxBodyBytes: options.maxBodyBytes,
        maxFrameBytes: options.maxFrameBytes,
        accepting: options.accepting,
      });
      sessions.add(session);
      socket.on('close', () => sessions.delete(session));
    },
  });
  return { sessions };
}
