import { statfs } from 'node:fs/promises';
import type { Clock, Random } from '@ricochet/core';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ServiceOf } from '../admin/request-scope.js';
import { type BrokerConfig, maxFrameBytesOf } from '../config.js';
import {
  BrokerEngine,
  type BrokerEngineOptions,
  type BrokerService,
  type EngineEventSink,
  type TimerService,
} from '../engine/index.js';
import { type PeerAccess, PeerSessions } from '../gateway/peer-access.js';
import type { QueueMapFeeds } from '../gateway/queue-map-feed.js';
import type { BrokerStore } from '../store/broker-store.js';
import {
  brokerIdentity,
  describeStore,
  type OpenStoreHooks,
  openStoreQueue,
  openStores,
} from '../store/open-store.js';
import { FeedHub } from '../store/postgres/standby-feed.js';
import { ClusterMetrics } from './cluster-metrics.js';
import { advertisedUrlOf, registerBroker } from './membership/broker-registration.js';
import { ClusterHealth, probeHealthz } from './membership/cluster-health.js';
import { registerClusterRoutes } from './membership/cluster-routes.js';
import { readClusterView } from './membership/cluster-view.js';
import { readPeerToken } from './membership/peer-token.js';
import { QueueMaps } from './membership/queue-map.js';
import type { QueueRoute } from './membership/queue-ownership.js';
import { QUEUE_HEADER, registerQueueScope } from './peers/queue-scope.js';
import { PartitionRouter } from './routing/partition-router.js';
import { spreadQueues } from './spread-queues.js';
import { registerFeedRoute } from './standby/feed-route.js';

/** What {@link openBackend} needs besides the config: `buildBroker`'s hooks and the app's log. */
export interface BackendOptions {
  readonly log: FastifyBaseLogger;
  /** The store's events, and what to do when it stops taking writes (`store-log.ts`). */
  readonly storeHooks: OpenStoreHooks;
  readonly clock?: Clock;
  readonly timers?: TimerService;
  readonly random?: Random;
  /** Wraps every store opened, e.g. to inject faults in crash tests. */
  readonly wrapStore?: (store: BrokerStore) => BrokerStore;
  /** The peer token of a broker on the embedded store, for tests of sessions between brokers. */
  readonly peerToken?: string;
  /** Called once the stores are open, just before the engine starts. */
  readonly beforeEngineStart?: () => void;
  /** X7: where every engine (one per queue of a split store) sends its events. */
  readonly onEvent?: EngineEventSink;
}

/**
 * The service behind the front doors, in whichever deployment the config names: one engine on one
 * store; a router over one engine per queue of a store split into queues (`storeQueues`); or, with
 * queues spread over brokers (`storeSpread`), a router whose queues are served here or by their
 * owners elsewhere. Everything that exists only because there is more than one broker (the broker
 * registry, the peer token, queue ownership, the per-queue admin scope, `/v1/cluster`) comes with it.
 */
export interface Backend {
  /** The engine, or with `storeQueues` above 1 the router over one engine per queue. Started. */
  readonly engine: BrokerService;
  /** What sessions between brokers are checked against; `undefined` without a peer token. */
  readonly peers: PeerAccess | undefined;
  /**
   * With queues spread over brokers, the queue map told to clients that route to owners
   * (`cluster/membership/queue-map.ts`); `undefined` otherwise, and no client is told one.
   */
  readonly queueMaps: QueueMapFeeds | undefined;
  /**
   * Scope admin requests that name one queue to that queue's service (`cluster/peers/queue-scope.ts`).
   * Register it before the principals' guard. @returns what the admin routes call to find their service.
   */
  registerQueueScope(app: FastifyInstance): ServiceOf;
  /** `GET /v1/cluster`, for a broker on a PostgreSQL store; nothing otherwise. */
  registerClusterRoutes(app: FastifyInstance): void;
  /** With queues spread over brokers, where this broker routes each queue now; `undefined` otherwise. */
  queueRoutes(): readonly QueueRoute[] | undefined;
  /**
   * The queues routed nowhere now (`GET /readyz`): with queues spread over brokers, those between
   * owners or not yet taken; otherwise none, since every store opened before the engine started.
   */
  queuesWithoutOwner(): readonly number[];
  /**
   * The broker listens at `url` (and `tcpUrl`): advertise it to the other brokers unless told
   * otherwise, and spread, wait until the queues have owners (bounded).
   */
  announce(url: string, tcpUrl: string | undefined): Promise<void>;
  /** Stop owning queues, close the engine and its stores, then leave the broker registry. */
  close(): Promise<void>;
}

/** Open the stores and the engine (or router) the config names, and the cluster around them. */
export async function openBackend(config: BrokerConfig, options: BackendOptions): Promise<Backend> {
  const { log } = options;
  const peerToken =
    options.peerToken ?? (config.store === undefined ? undefined : await readPeerToken(config.store));
  /** Where this broker routes each queue, once queues are spread over brokers (set below). */
  let routesNow: (() => readonly QueueRoute[]) | undefined;
  // On a shared store, each queue's owner feeds its commits to the standbys (issue 42, item 2).
  const feedHub = config.store !== undefined && peerToken !== undefined ? new FeedHub() : undefined;
  const storeHooks: OpenStoreHooks =
    feedHub === undefined || peerToken === undefined
      ? options.storeHooks
      : {
          ...options.storeHooks,
          standbyFeed: {
            requestHeaders: (queue) => ({
              authorization: `Bearer ${peerToken}`,
              [QUEUE_HEADER]: String(queue),
            }),
            hub: feedHub,
            // Spread, a queue's owner is found where this broker routes the queue.
            ownerUrl: (queue, holder) => {
              const route = routesNow?.()[queue];
              return route?.to === 'elsewhere' ? route.url : holder.advertiseUrl;
            },
            onFollowing: (queue, following, ownerUrl) =>
              following
                ? log.info(`queue ${queue}: the local copy follows the owner's feed at ${ownerUrl}`)
                : log.warn(
                    `queue ${queue}: the owner's feed at ${ownerUrl} ended; the local copy reads changes from the database until it is back`,
                  ),
          },
        };
  // Just before the stores open: nothing between can fail and leave the row to expire.
  const brokerRegistry =
    config.store === undefined
      ? undefined
      : await registerBroker(config, config.store, (error) =>
          log.warn({ err: error }, 'could not renew this broker in the broker registry; trying again'),
        );
  // Spread over brokers, a queue's store opens when this broker takes its lease, if ever (below).
  const spread = config.store !== undefined && config.storeSpread;
  const openStartMs = performance.now();
  const opened = spread
    ? []
    : await openStores(config, storeHooks).catch(async (error: unknown) => {
        await brokerRegistry?.close();
        throw error;
      });
  // On a shared store this is the moment this broker took it over (a standby waited until now).
  if (!spread) {
    log.info(
      {
        store: describeStore(config),
        queues: opened.length,
        openMs: Math.round(performance.now() - openStartMs),
      },
      'store opened',
    );
  }
  const stores = options.wrapStore ? opened.map(options.wrapStore) : opened;
  options.beforeEngineStart?.();
  const engineOptions: Omit<BrokerEngineOptions, 'store'> = {
    config,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
    ...(options.random ? { random: options.random } : {}),
    onError: (error, context) => log.error({ err: error }, context),
    onNotice: (message) => log.warn(message),
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    // Free space for the broker's user (bavail), on the file system of the data directory.
    freeDiskBytes: async () => {
      const stats = await statfs(config.dataDir);
      return stats.bavail * stats.bsize;
    },
  };
  const [onlyStore] = stores;
  const router = spread
    ? new PartitionRouter(new Array<undefined>(config.storeQueues).fill(undefined), engineOptions)
    : undefined;
  const engine: BrokerService =
    router ??
    (stores.length === 1 && onlyStore !== undefined
      ? new BrokerEngine({ ...engineOptions, store: onlyStore })
      : new PartitionRouter(stores, engineOptions));
  engine.start();
  const spreading = router !== undefined && brokerRegistry !== undefined && peerToken !== undefined;
  const clusterMetrics = spreading ? new ClusterMetrics(engine.metrics.registry) : undefined;
  // A peer or the database silent for a lease is unreachable: four probes per lease tell it, not
  // the cluster reading's pace (at most every 250 ms), which made probes of idle peers a tenth of
  // an idle cluster's CPU.
  const health = spreading
    ? new ClusterHealth({
        me: brokerIdentity(config),
        staleAfterMs: config.storeLeaseMs,
        probeEveryMs: Math.max(10, Math.floor(config.storeLeaseMs / 4)),
        probe: probeHealthz,
      })
    : undefined;
  // Its routes are the ownership's, made just below; read only once a session asks.
  const queueMaps = spreading
    ? new QueueMaps({
        me: brokerIdentity(config),
        queues: config.storeQueues,
        routes: () => ownership?.routes() ?? [],
      })
    : undefined;
  const ownership =
    router && brokerRegistry && peerToken !== undefined && health
      ? spreadQueues({
          me: brokerIdentity(config),
          queues: config.storeQueues,
          standbys: config.storeStandbys,
          router,
          registry: brokerRegistry,
          peerToken,
          maxFrameBytes: maxFrameBytesOf(config),
          leaseTtlMs: config.storeLeaseMs,
          openQueue: async (queue, leaseGate, signal, onLost) => {
            const onFenced = () => clusterMetrics?.fenced();
            const store = await openStoreQueue(config, { ...storeHooks, onLost, onFenced }, queue, {
              leaseGate,
              signal,
            });
            return options.wrapStore ? options.wrapStore(store) : store;
          },
          onRoute: (route) => {
            queueMaps?.routeChanged();
            log.info(
              {
                queue: route.queue,
                route: route.to,
                ...(route.to === 'elsewhere' ? { owner: route.url } : {}),
              },
              route.to === 'here'
                ? `queue ${route.queue}: served by this broker`
                : route.to === 'elsewhere'
                  ? `queue ${route.queue}: forwarded to its owner at ${route.url}`
                  : `queue ${route.queue}: between owners; its requests are answered 503 until one takes it`,
            );
          },
          onHandover: (_queue, direction) => clusterMetrics?.handover(direction),
          health,
          onView: (view) => queueMaps?.brokersSeen(view.brokers),
          onForwarded: (request, messages) => clusterMetrics?.forwarded(request, messages),
          onError: (error, context) => log.warn({ err: error }, context),
        })
      : undefined;
  if (ownership) routesNow = () => ownership.routes();
  const peerSessions = new PeerSessions();
  if (router) router.onQueueGivenUp = (queue) => peerSessions.closeQueue(queue);
  const peers: PeerAccess | undefined =
    peerToken === undefined
      ? undefined
      : { token: peerToken, queueService: (queue) => engine.queueService(queue), sessions: peerSessions };
  return {
    engine,
    peers,
    queueMaps,
    registerQueueScope(app) {
      return registerQueueScope(app, engine, peers);
    },
    registerClusterRoutes(app) {
      if (!brokerRegistry) return;
      // Active/standby, every broker but the owner stands by for every queue: no queue has standbys of its own.
      const standbys = ownership ? config.storeStandbys : 0;
      const readView = () => brokerRegistry.read((sql) => readClusterView(sql, config.storeQueues, standbys));
      registerClusterRoutes(app, {
        readView,
        ...(ownership ? { routes: () => ownership.routes() } : {}),
        ...(health ? { health, readBudgetMs: Math.min(2_000, config.storeLeaseMs) } : {}),
      });
      if (feedHub) registerFeedRoute(app, feedHub);
    },
    queueRoutes() {
      return ownership?.routes();
    },
    queuesWithoutOwner() {
      return (ownership?.routes() ?? []).flatMap((route) => (route.to === 'nowhere' ? [route.queue] : []));
    },
    async announce(url, tcpUrl) {
      // Other brokers reach the queues this one owns where it listens, unless told otherwise.
      if (brokerRegistry && config.advertiseUrl === undefined) {
        await brokerRegistry.advertise({
          advertiseUrl: advertisedUrlOf(url, config.host),
          advertiseTcpUrl: config.advertiseTcpUrl ?? (tcpUrl && advertisedUrlOf(tcpUrl, config.host)),
        });
      }
      // Spread, the queues have owners a moment after start (this broker's first leases, the
      // others' URLs): until then they answer 503, so say so only once they do, or a lease later.
      await ownership?.routedEverywhere(2 * config.storeLeaseMs);
    },
    async close() {
      try {
        health?.stop();
        await ownership?.stop();
        await engine.close();
      } finally {
        // After the stores gave their leases back: until then this broker still holds them.
        await brokerRegistry?.close();
      }
    },
  };
}
