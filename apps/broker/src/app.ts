import type { Clock, Random } from '@ricochet/core';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerCounterRoutes } from './admin/counter-routes.js';
import { registerDeadLetterRoutes } from './admin/dead-letter-routes.js';
import { registerFifoRoutes } from './admin/fifo-routes.js';
import { registerGroupRoutes } from './admin/group-routes.js';
import { registerHealthRoutes } from './admin/health-routes.js';
import { registerMessageRoutes } from './admin/message-routes.js';
import { registerTopicRoutes } from './admin/topic-routes.js';
import { defaultUiDir, registerUiRoutes } from './admin/ui-routes.js';
import { type BrokerConfig, type BrokerConfigInput, resolveBrokerConfig } from './config.js';
import { BrokerEngine } from './engine/broker-engine.js';
import type { TimerService } from './engine/timer-service.js';
import { registerGateway } from './gateway/websocket-gateway.js';
import type { BrokerStore } from './store/broker-store.js';
import { openLmdbStore } from './store/lmdb-store.js';

const MIB = 1024 * 1024;

/** Where a listening broker can be reached. */
export interface BrokerAddress {
  readonly host: string;
  readonly port: number;
  /** The endpoint clients take: `ws://host:port`. */
  readonly url: string;
}

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
}

/** A broker built by {@link buildBroker}: not listening until {@link Broker.listen}. */
export interface Broker {
  readonly app: FastifyInstance;
  readonly engine: BrokerEngine;
  readonly config: BrokerConfig;
  /** The bound address once listening. */
  readonly address: BrokerAddress | undefined;
  /** Listen on the configured host and port (`0` picks a free port). */
  listen(): Promise<BrokerAddress>;
  /**
   * Drain and stop: refuse new work, let requests in progress finish (bounded by
   * `drainTimeoutMs`), close every session, then flush and close the store. Idempotent.
   */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Build the broker: the store, the engine, the WebSocket gateway on `/v1/ws` and the admin HTTP
 * routes, in one Fastify app. It does not listen by itself, so tests can use `app.inject` or
 * listen on port 0.
 */
export async function buildBroker(
  input: BrokerConfigInput = {},
  options: BuildBrokerOptions = {},
): Promise<Broker> {
  const config = resolveBrokerConfig(input);
  const maxFrameBytes = Math.max(16 * MIB, config.maxBodyBytes + MIB);
  const app = Fastify({
    logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
    bodyLimit: 1 * MIB,
  });
  const opened = openLmdbStore({
    path: config.dataDir,
    flushPolicy: config.flushPolicy,
    onWriteError: (error) => app.log.error({ err: error }, 'store write failed'),
  });
  const store = options.wrapStore ? options.wrapStore(opened) : opened;
  const engine = new BrokerEngine({
    store,
    config,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
    ...(options.random ? { random: options.random } : {}),
    onError: (error, context) => app.log.error({ err: error }, context),
  });
  engine.start();

  let accepting = true;
  const isAccepting = () => accepting;
  const gateway = await registerGateway(app, {
    engine,
    authTokens: config.authTokens,
    helloTimeoutMs: config.helloTimeoutMs,
    maxBodyBytes: config.maxBodyBytes,
    maxFrameBytes,
    accepting: isAccepting,
  });
  registerHealthRoutes(app, engine, isAccepting);
  registerTopicRoutes(app, engine);
  registerGroupRoutes(app, engine);
  registerMessageRoutes(app, engine);
  registerDeadLetterRoutes(app, engine);
  registerFifoRoutes(app, engine);
  registerCounterRoutes(app, engine);
  if (config.ui) registerUiRoutes(app, config.uiDir ?? defaultUiDir());

  let address: BrokerAddress | undefined;
  let closing: Promise<void> | undefined;

  const drainAndClose = async () => {
    accepting = false;
    engine.drain();
    const idle = Promise.all([...gateway.sessions].map((session) => session.whenIdle()));
    let drainTimer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      drainTimer = setTimeout(resolve, config.drainTimeoutMs);
      drainTimer.unref();
    });
    await Promise.race([idle, timedOut]);
    clearTimeout(drainTimer);
    for (const session of gateway.sessions) session.close();
    await app.close();
    await engine.close();
  };

  const broker: Broker = {
    app,
    engine,
    config,
    get address() {
      return address;
    },
    async listen() {
      await app.listen({ port: config.port, host: config.host });
      const bound = app.server.address();
      const port = typeof bound === 'object' && bound ? bound.port : config.port;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      address = { host: config.host, port, url: `ws://${host}:${port}` };
      return address;
    },
    close() {
      closing ??= drainAndClose();
      return closing;
    },
    [Symbol.asyncDispose]() {
      return broker.close();
    },
  };
  return broker;
}
