import type { Socket } from 'node:net';
import { hostname } from 'node:os';
import { type BrokerConfig, maxFrameBytesOf } from '../../config.js';
import { type OwnerLookup, openOwnerLookup } from '../../store/postgres/owner-lookup.js';
import { loadTlsCredentials } from '../../tls.js';
import { type HeldClientAcceptor, type StandbyRelay, startStandbyRelay } from './standby-relay.js';
import { type StandbyTcpRelay, startStandbyTcpRelay } from './standby-tcp-relay.js';

/**
 * The broker a standby hands its held clients to, once it listens on the standby's ports: what it
 * needs of `Broker` (`app.ts`), declared here so that the cluster never imports the app above it.
 */
export interface AdoptingBroker {
  readonly adopt: HeldClientAcceptor & { tcp(socket: Socket): void };
}

/** A broker on a shared store, listening before it owns the store (see {@link startStandby}). */
export interface Standby {
  readonly relay: StandbyRelay;
  /** Where the TCP relay listens (`tcp://` or `tls://`), with `--tcp-port`. */
  readonly tcpUrl: string | undefined;
  /** The config to build the broker with: the relay's port, and the URL to advertise. */
  readonly config: BrokerConfig;
  /**
   * This broker owns the store: stop relaying (relayed clients reconnect, to it) and free the
   * ports for the broker to listen on. Clients held while no owner could be reached stay held.
   */
  stopListening(): Promise<void>;
  /** Give the held clients to `broker`, now listening on the same ports, and let go of the rest. */
  handOver(broker: AdoptingBroker): Promise<void>;
  /** Stop relaying, free the ports, and close every client still held (the broker did not start). */
  close(): Promise<void>;
}

/**
 * The standby a broker starts as, if its deployment has one: on a shared store, it listens at once,
 * and until this broker owns the store it relays its clients to the owner, keeping the ports when
 * it takes over. Spread over brokers, every broker serves at once, and on the embedded store there
 * is no other broker: no standby.
 */
export function standbyFor(config: BrokerConfig): Promise<Standby | undefined> {
  if (config.store === undefined || config.storeSpread) return Promise.resolve(undefined);
  return startStandby({ ...config, store: config.store });
}

/**
 * For a broker on a PostgreSQL store (`config.store`): listen at once and relay clients to the
 * store's owner until this broker owns the store, so that every broker accepts every client. The
 * broker is then built with the relay's ports (so `--port 0` keeps the port clients already have)
 * and advertises `--advertise-url`, by default the relay's URL (with the host name when listening
 * on every interface), and with `--tcp-port`, `--advertise-tcp-url` (by default that host and the
 * TCP relay's port).
 */
export async function startStandby(
  config: BrokerConfig & { readonly store: string },
  lookup: OwnerLookup = openOwnerLookup(config.store),
): Promise<Standby> {
  const tls =
    config.tlsCert !== undefined && config.tlsKey !== undefined
      ? await loadTlsCredentials(config.tlsCert, config.tlsKey)
      : undefined;
  let relay: StandbyRelay | undefined;
  let tcpRelay: StandbyTcpRelay | undefined;
  // Once this broker has taken the lease, the row names itself while it is still loading the
  // store: a relay to itself would loop, so its clients are told to come back instead.
  let ownUrls: readonly (string | undefined)[] = [];
  const notSelf = (owner: string | undefined) => (ownUrls.includes(owner) ? undefined : owner);
  try {
    relay = await startStandbyRelay({
      host: config.host,
      port: config.port,
      ...(tls ? { tls } : {}),
      maxFrameBytes: maxFrameBytesOf(config),
      maxConnections: config.maxConnections,
      findOwner: async () => notSelf(await lookup.find()),
    });
    if (config.tcpPort !== undefined) {
      tcpRelay = await startStandbyTcpRelay({
        host: config.host,
        port: config.tcpPort,
        ...(tls ? { tls } : {}),
        maxConnections: config.maxConnections,
        findOwner: async () => notSelf(await lookup.findTcp()),
      });
    }
  } catch (error) {
    await relay?.close();
    await lookup.close();
    throw error;
  }
  const webSocketRelay = relay;
  const everyInterface = config.host === '0.0.0.0' || config.host === '::';
  const advertiseUrl =
    config.advertiseUrl ??
    (everyInterface ? webSocketRelay.url.replace(/\/\/[^/]+:/, `//${hostname()}:`) : webSocketRelay.url);
  const advertiseTcpUrl =
    tcpRelay === undefined
      ? undefined
      : (config.advertiseTcpUrl ??
        `${tls ? 'tls' : 'tcp'}://${new URL(advertiseUrl).host.replace(/:\d+$/, '')}:${tcpRelay.port}`);
  ownUrls = [advertiseUrl, advertiseTcpUrl];
  const boundHost = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    relay: webSocketRelay,
    tcpUrl: tcpRelay === undefined ? undefined : `${tls ? 'tls' : 'tcp'}://${boundHost}:${tcpRelay.port}`,
    config: {
      ...config,
      port: webSocketRelay.port,
      advertiseUrl,
      ...(tcpRelay === undefined ? {} : { tcpPort: tcpRelay.port, advertiseTcpUrl }),
    },
    async stopListening() {
      await webSocketRelay.stopListening();
      await tcpRelay?.stopListening();
    },
    async handOver(broker) {
      webSocketRelay.handOver(broker.adopt);
      tcpRelay?.handOver(broker.adopt.tcp);
      await lookup.close();
    },
    async close() {
      await webSocketRelay.close();
      await tcpRelay?.close();
      await lookup.close();
    },
  };
}
