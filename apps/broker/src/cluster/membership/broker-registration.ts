import { hostname } from 'node:os';
import type { BrokerConfig } from '../../config.js';
import { brokerIdentity } from '../../store/open-store.js';
import { type BrokerRegistry, openBrokerRegistry } from './broker-registry.js';

/**
 * A broker on a PostgreSQL store is a live broker of its database from the start, standby or
 * owner: registered before it opens the store (a standby waits in there for the lease), with its
 * lease's TTL, so that a broker that stops renewing its lease stops being live as soon. A renewal
 * that fails is told to `onRenewError` and tried again.
 */
export function registerBroker(
  config: BrokerConfig,
  url: string,
  onRenewError: (error: unknown) => void,
): Promise<BrokerRegistry> {
  return openBrokerRegistry({
    url,
    brokerId: brokerIdentity(config),
    ...(config.advertiseUrl === undefined ? {} : { advertiseUrl: config.advertiseUrl }),
    ...(config.advertiseTcpUrl === undefined ? {} : { advertiseTcpUrl: config.advertiseTcpUrl }),
    storeQueues: config.storeQueues,
    ttlMs: config.storeLeaseMs,
    onError: onRenewError,
  });
}

/** A URL a broker listens on as other brokers reach it: with the host name when it listens on every interface. */
export function advertisedUrlOf(url: string, host: string): string {
  const everyInterface = host === '0.0.0.0' || host === '::';
  return everyInterface ? url.replace(/\/\/[^/]+:/, `//${hostname()}:`) : url;
}
