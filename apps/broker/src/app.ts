import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Clock, type Random, systemClock } from '@ricochet/core';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerAdminRoutes } from './admin/admin-routes.js';
import { EventStream } from './admin/event-routes.js';
import { registerHttpAccess } from './admin/http-access.js';
import { defaultUiDir, registerUiRoutes } from './admin/ui-routes.js';
import { AccessControl, type ReloadOutcome } from './auth/access-control.js';
import { loadStartupAuth } from './auth/startup-auth.js';
import type { BrokerAddress } from './broker-address.js';
import { openBackend, type QueueRoute } from './cluster/index.js';
import { type BrokerConfig, type BrokerConfigInput, maxFrameBytesOf, resolveBrokerConfig } from './config.js';
import type { BrokerService, TimerService } from './engine/index.js';
import { ConnectionLimits } from './gateway/connection-limits.js';
import { GrpcGateway } from './gateway/grpc/grpc-gateway.js';
import { registerHttpFrames } from './gateway/http-frames.js';
import { TcpGateway } from './gateway/tcp-gateway.js';
import { type GatewayOptions, registerGateway } from './gateway/websocket-gateway.js';
import { httpServerOptions } from './http-server-options.js';
import { FASTIFY_LISTENING_TEXT, fastifyLogOptions } from './log-format.js';
import type { BrokerStore } from './store/broker-store.js';
import { loggedStoreHooks } from './store-log.js';
import { loadTlsCredentials, type SecureContextTarget, TlsReloader, type TlsReloadResult } from './tls.js';

const MIB = 1024 * 1024;

/** Test and embedding hooks; production uses the defaults. */
export interface BuildBrokerOptions {
  /** @default systemClock */
  readonly clock?: Clock;
  /** @default Node's timers */
  readonly timers?: TimerService;
  /** @default Math.random */
  readonly random?: Random;
  /**
   * Wraps the store the broker opens, e.g. to inject faults (a commit held in flight, a crash at a
   * chosen write) in crash tests. @default undefined (the store as opened)
   */
  readonly wrapStore?: (store: BrokerStore) => BrokerStore;
  /**
   * Called once if a PostgreSQL store stops taking writes for good: another broker took it over
   * (this one was paused or cut off past `storeLeaseMs`) or it stayed unreachable. The broker can
   * no longer promise anything, so it must stop. @default log it and close the broker
   */
  readonly onStoreLost?: (error: unknown) => void;
  /**
   * Accept sessions between brokers (`hello.queue`) with this token. A broker on PostgreSQL reads
   * the cluster's from the database; this gives one to a broker on the embedded store, for tests of
   * those sessions. @default the database's, or none on the embedded store
   */
  readonly peerToken?: string;
}

/** A broker built by {@link buildBroker}: not listening until {@link Broker.listen}. */
export interface Broker {
  readonly app: FastifyInstance;
  /** The engine, or with `storeQueues` above 1 the router over one engine per queue. */
  readonly engine: BrokerService;
  readonly config: BrokerConfig;
  /** The bound address once listening. */
  readonly address: BrokerAddress | undefined;
  /**
   * With queues spread over brokers (`storeSpread`), where this broker routes each queue now:
   * `here`, `elsewhere` (its owner's URL) or `nowhere` (between owners); `undefined` otherwise.
   */
  queueRoutes(): readonly QueueRoute[] | undefined;
  /** Listen on the configured host and port, and `tcpPort` when set (`0` picks a free port). */
  listen(): Promise<BrokerAddress>;
  /**
   * Serve connections that reached this broker's ports before it listened, as if they had just
   * been accepted: a standby's relay holds them while no broker owns the store, and hands them
   * over when this one takes it (`cluster/standby/standby.ts`). `upgrade`: a WebSocket upgrade request not yet
   * answered; `request`: any other HTTP request, its body unread; `tcp`: a TCP socket, past its
   * TLS handshake when TLS is on.
   */
  readonly adopt: {
    upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
    request(request: IncomingMessage, response: ServerResponse): void;
    tcp(socket: Socket): void;
  };
  /**
   * Read the auth file again and put it in force (what `SIGHUP` does): open sessions are judged by
   * it from their next request. A bad file is refused and logged, and the one in force stays.
   */
  reloadAuth(): Promise<ReloadOutcome>;
  /**
   * Read `tlsCert`/`tlsKey` again and serve new connections with them (what SIGHUP does). A pair
   * that cannot be read or does not match is refused and logged; the old one stays in force.
   * Never throws; without TLS it answers `{ ok: false, reason: 'tls-off' }`.
   */
  reloadTls(): Promise<TlsReloadResult>;
  /**
   * Drain and stop: refuse new work, let requests in progress finish (bounded by
   * `drainTimeoutMs`), close every session, then flush and close the store. Idempotent.
   */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Build the broker: the store, the engine, the WebSocket gateway on `/v1/ws` and the admin HTTP
 * routes, in one Fastify app, and the TCP listener when `tcpPort` is set. It does not listen by itself, so tests can use `app.inject` or
 * listen on port 0.
 * @throws BrokerStartError for a bad auth file, or no authentication on a non-loopback host.
 */
export async function buildBroker(
  input: BrokerConfigInput = {},
  options: BuildBrokerOptions = {},
): Promise<Broker> {
  const config = resolveBrokerConfig(input);
  // Before the store opens: a broker that may not start leaves nothing behind.
  const startupAuth = await loadStartupAuth(config);
  const maxFrameBytes = maxFrameBytesOf(config);
  // A bad pair fails the start, before the store opens: nothing to undo.
  const tls =
    config.tlsCert !== undefined && config.tlsKey !== undefined
      ? await loadTlsCredentials(config.tlsCert, config.tlsKey)
      : undefined;
  const app = Fastify({
    ...fastifyLogOptions(config),
    bodyLimit: 1 * MIB,
    ...httpServerOptions(config, tls),
  });
  const tlsReloader =
    tls === undefined || config.tlsCert === undefined || config.tlsKey === undefined
      ? undefined
      : new TlsReloader({
          certPath: config.tlsCert,
          keyPath: config.tlsKey,
          targets: [app.server as unknown as SecureContextTarget],
          log: app.log,
        });
  let broker: Broker | undefined;
  const storeHooks = loggedStoreHooks(app.log, (error) => {
    if (options.onStoreLost) options.onStoreLost(error);
    else void broker?.close();
  });
  // X7: the engines' events, for `GET /v1/events`; the stream needs the metrics the backend opens.
  let events: EventStream | undefined;
  // The hooks of `options` the backend takes: clock, timers, random, wrapStore and peerToken.
  const backend = await openBackend(config, {
    ...options,
    log: app.log,
    onEvent: (event) => events?.publish(event),
    storeHooks,
    beforeEngineStart: () => {
      for (const warning of startupAuth.warnings) app.log.warn(warning);
    },
  });
  const { engine, peers, queueMaps } = backend;
  const eventStream = new EventStream({ registry: engine.metrics.registry });
  events = eventStream;
  const access = new AccessControl({
    authFile: startupAuth.authFile,
    authFilePath: config.authFile,
    registry: engine.metrics.registry,
    log: app.log,
    clock: options.clock ?? systemClock,
  });
  // Before the principals' guard: the requests it scopes to one queue are judged by the peer token.
  const serviceOf = backend.registerQueueScope(app);
  registerHttpAccess(app, access);

  let accepting = true;
  const limits = new ConnectionLimits(config, engine.metrics.registry);
  const isAccepting = () => accepting;
  const gatewayOptions: GatewayOptions = {
    engine,
    access,
    helloTimeoutMs: config.helloTimeoutMs,
    maxBodyBytes: config.maxBodyBytes,
    maxFrameBytes,
    accepting: isAccepting,
    // One instance for every transport: maxConnections counts them together.
    limits,
    websocketMessageTimeoutMs: config.websocketMessageTimeoutMs,
    peers,
    queueMaps,
  };
  const gateway = await registerGateway(app, gatewayOptions);
  const httpFrames = await registerHttpFrames(app, gatewayOptions);
  const tcpGateway =
    config.tcpPort === undefined
      ? undefined
      : new TcpGateway({
          ...gatewayOptions,
          log: app.log,
          tls,
          tlsHandshakeTimeoutMs: config.httpHeadersTimeoutMs,
        });
  if (tcpGateway?.secure) tlsReloader?.addTarget(tcpGateway.server as unknown as SecureContextTarget);
  const grpcGateway = GrpcGateway.ofConfig(config, {
    engine,
    log: app.log,
    access,
    accepting: isAccepting,
    clock: options.clock ?? systemClock,
    tls,
    limits,
  });
  if (grpcGateway?.tlsServer) tlsReloader?.addTarget(grpcGateway.tlsServer as unknown as SecureContextTarget);
  const allSessions = () => [...gateway.sessions, ...(tcpGateway?.sessions ?? []), ...httpFrames.sessions];
  registerAdminRoutes(app, {
    engine,
    serviceOf,
    health: { accepting: isAccepting, queuesWithoutOwner: () => backend.queuesWithoutOwner() },
    events: eventStream,
  });
  backend.registerClusterRoutes(app);
  if (config.ui) registerUiRoutes(app, config.uiDir ?? defaultUiDir());

  let address: BrokerAddress | undefined;
  let closing: Promise<void> | undefined;

  const drainAndClose = async () => {
    accepting = false;
    engine.drain();
    const idle = Promise.all(allSessions().map((session) => session.whenIdle()));
    let drainTimer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      drainTimer = setTimeout(resolve, config.drainTimeoutMs);
      drainTimer.unref();
    });
    await Promise.race([idle, timedOut]);
    clearTimeout(drainTimer);
    for (const session of allSessions()) session.close();
    eventStream.close();
    await grpcGateway?.close();
    await tcpGateway?.close();
    await app.close();
    await backend.close();
  };

  broker = {
    app,
    engine,
    config,
    get address() {
      return address;
    },
    queueRoutes() {
      return backend.queueRoutes();
    },
    async listen() {
      await app.listen({
        port: config.port,
        host: config.host,
        listenTextResolver: () => FASTIFY_LISTENING_TEXT,
      });
      const bound = app.server.address();
      const port = typeof bound === 'object' && bound ? bound.port : config.port;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      const url = `${tls === undefined ? 'ws' : 'wss'}://${host}:${port}`;
      if (tcpGateway === undefined || config.tcpPort === undefined) {
        address = { host: config.host, port, url, endpoints: [url] };
      } else {
        const tcpPort = await tcpGateway.listen(config.host, config.tcpPort);
        const tcpUrl = `${tls === undefined ? 'tcp' : 'tls'}://${host}:${tcpPort}`;
        address = { host: config.host, port, url, tcpPort, tcpUrl, endpoints: [url, tcpUrl] };
      }
      const grpc = await grpcGateway?.listen(config.host, host);
      if (grpc) address = { ...address, ...grpc, endpoints: [...address.endpoints, grpc.grpcUrl] };
      await backend.announce(url, address.tcpUrl);
      return address;
    },
    adopt: {
      upgrade(request, socket, head) {
        app.server.emit('upgrade', request, socket, head);
      },
      request(request, response) {
        app.server.emit('request', request, response);
      },
      tcp(socket) {
        if (tcpGateway === undefined) socket.destroy();
        else tcpGateway.server.emit(tcpGateway.secure ? 'secureConnection' : 'connection', socket);
      },
    },
    reloadAuth() {
      return access.reload();
    },
    async reloadTls() {
      if (tlsReloader === undefined) {
        return { ok: false, reason: 'tls-off', message: 'TLS is off: start with tlsCert and tlsKey' };
      }
      return tlsReloader.reload();
    },
    close() {
      closing ??= drainAndClose();
      return closing;
    },
    [Symbol.asyncDispose]() {
      return built.close();
    },
  };
  const built: Broker = broker;
  return built;
}
