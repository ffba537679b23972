import { PLACEMENT_RULE, type QueueMapFrame } from '@ricochet/protocol';
import type { QueueMapFeed, QueueMapFeeds, QueueMapTransport } from '../../gateway/queue-map-feed.js';
import type { LiveBroker } from './broker-registry.js';
import type { QueueRoute } from './queue-ownership.js';

/** What {@link QueueMaps} is built over. */
export interface QueueMapsOptions {
  /** This broker's id in the registry. */
  readonly me: string;
  readonly queues: number;
  /** Where this broker routes each queue now (`QueueOwnership.routes`). */
  readonly routes: () => readonly QueueRoute[];
}

/**
 * The queue map this broker tells clients that route to owners (DESIGN.md §9): each queue's owner
 * as this broker routes it, so that a client sends where this broker would forward, and each
 * owner's endpoint on the client's transport, from the registry. The map follows the routes, not
 * the database's latest reading: a client told of an owner this broker cannot reach yet would
 * only be refused there.
 *
 * Told of every route change and every reading of the registry, it builds each transport's map
 * once per change and tells the sessions watching it after the change's turn of the event loop,
 * so a burst of moves (a broker joining moves several queues) is one frame per session.
 */
export class QueueMaps implements QueueMapFeeds {
  readonly #options: QueueMapsOptions;
  /** Each live broker's client endpoints, from the last reading of the registry. */
  #brokers = new Map<string, Pick<LiveBroker, 'advertiseUrl' | 'advertiseTcpUrl'>>();
  readonly #built = new Map<QueueMapTransport, QueueMapFrame>();
  readonly #listeners = new Set<() => void>();
  #telling = false;

  constructor(options: QueueMapsOptions) {
    this.#options = options;
  }

  feed(transport: QueueMapTransport): QueueMapFeed {
    return {
      current: () => this.#mapOf(transport),
      onChange: (listener) => {
        // A wrapper per watcher, so that one session watching twice is two watchers.
        const watcher = () => listener();
        this.#listeners.add(watcher);
        return () => {
          this.#listeners.delete(watcher);
        };
      },
    };
  }

  /** A queue's route changed (`QueueOwnership`'s `onRoute`). */
  routeChanged(): void {
    this.#changed();
  }

  /** The registry was read: an owner's endpoints may have changed (it advertised them late, say). */
  brokersSeen(brokers: readonly LiveBroker[]): void {
    const next = new Map(
      brokers.map((broker) => [
        broker.brokerId,
        { advertiseUrl: broker.advertiseUrl, advertiseTcpUrl: broker.advertiseTcpUrl },
      ]),
    );
    if (sameEndpoints(this.#brokers, next)) return;
    this.#brokers = next;
    this.#changed();
  }

  #changed(): void {
    this.#built.clear();
    if (this.#telling) return;
    this.#telling = true;
    queueMicrotask(() => {
      this.#telling = false;
      for (const listener of this.#listeners) listener();
    });
  }

  #mapOf(transport: QueueMapTransport): QueueMapFrame | undefined {
    const built = this.#built.get(transport);
    if (built !== undefined) return built;
    const { me, queues } = this.#options;
    const routes = this.#options.routes();
    if (routes.length !== queues) return undefined;
    const owners = routes.map((route) =>
      route.to === 'here' ? me : route.to === 'elsewhere' ? route.owner : null,
    );
    const endpoints: Record<string, string> = {};
    for (const owner of new Set([me, ...owners])) {
      if (owner === null) continue;
      const broker = this.#brokers.get(owner);
      const endpoint = broker && endpointOn(transport, broker);
      if (endpoint) endpoints[owner] = endpoint;
    }
    const map: QueueMapFrame = {
      type: 'queueMap',
      placement: PLACEMENT_RULE,
      queues,
      broker: me,
      owners,
      endpoints,
    };
    this.#built.set(transport, map);
    return map;
  }
}

/**
 * Where a broker serves clients of `transport`: its advertised WebSocket URL (`--advertise-url`,
 * given with an `http` scheme by some operators, which a WebSocket client reaches as `ws`), or its
 * TCP one; `undefined` when it advertised none.
 */
function endpointOn(
  transport: QueueMapTransport,
  broker: Pick<LiveBroker, 'advertiseUrl' | 'advertiseTcpUrl'>,
): string | undefined {
  if (transport === 'tcp') return broker.advertiseTcpUrl || undefined;
  const url = broker.advertiseUrl;
  if (!url) return undefined;
  return url.replace(/^http(s?):/, 'ws$1:');
}

function sameEndpoints(
  a: ReadonlyMap<string, Pick<LiveBroker, 'advertiseUrl' | 'advertiseTcpUrl'>>,
  b: ReadonlyMap<string, Pick<LiveBroker, 'advertiseUrl' | 'advertiseTcpUrl'>>,
): boolean {
  if (a.size !== b.size) return false;
  for (const [id, endpoints] of a) {
    const other = b.get(id);
    if (
      other === undefined ||
      other.advertiseUrl !== endpoints.advertiseUrl ||
      other.advertiseTcpUrl !== endpoints.advertiseTcpUrl
    )
      return false;
  }
  return true;
}
