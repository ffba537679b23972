import { hostname } from 'node:os';
import { type BrokerConfig, maxFrameBytesOf } from './config.js';
import { type StandbyRelay, startStandbyRelay } from './gateway/standby-relay.js';
import { type OwnerLookup, openOwnerLookup } from './store/postgres/owner-lookup.js';
import { loadTlsCredentials } from './tls.js';

/** A broker on a shared store, listening before it owns the store (see {@link startStandby}). */
export interface Standby {
  readonly relay: StandbyRelay;
  /** The config to build the broker with: the relay's port, and the URL to advertise. */
  readonly config: BrokerConfig;
  /** Stop relaying and free the port, for the broker to listen on it. */
  close(): Promise<void>;
}

/**
 * For a broker on a PostgreSQL store (`config.store`): listen at once and relay clients to the
 * store's owner until this broker owns the store, so that every broker accepts every client. The
 * broker is then built with the relay's port (so `--port 0` keeps the port clients already have)
 * and advertises `--advertise-url`, by default the relay's URL (with the host name when listening
 * on every interface).
 */
export async function startStandby(
  config: BrokerConfig & { readonly store: string },
  lookup: OwnerLookup = openOwnerLookup(config.store),
): Promise<Standby> {
  const tls =
    config.tlsCert !== undefined && config.tlsKey !== undefined
      ? await loadTlsCredentials(config.tlsCert, config.tlsKey)
      : undefined;
  let relay: StandbyRelay;
  // Once this broker has taken the lease, the row names itself while it is still loading the
  // store: a relay to itself would loop, so its clients are told to come back instead.
  let ownUrl: string | undefined;
  const findOwner = async () => {
    const owner = await lookup.find();
    return owner === ownUrl ? undefined : owner;
  };
  try {
    relay = await startStandbyRelay({
      host: config.host,
      port: config.port,
      ...(tls ? { tls } : {}),
      maxFrameBytes: maxFrameBytesOf(config),
      findOwner,
    });
  } catch (error) {
    await lookup.close();
    throw error;
  }
  const everyInterface = config.host === '0.0.0.0' || config.host === '::';
  const advertiseUrl =
    config.advertiseUrl ?? (everyInterface ? relay.url.replace(/\/\/[^/]+:/, `//${hostname()}:`) : relay.url);
  ownUrl = advertiseUrl;
  return {
    relay,
    config: { ...config, port: relay.port, advertiseUrl },
    async close() {
      await relay.close();
      await lookup.close();
    },
  };
}
