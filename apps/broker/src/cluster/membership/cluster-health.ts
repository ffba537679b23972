import type { ClusterView } from './cluster-view.js';

/** This broker's own sight of a peer: whether it answered lately, and when it last did. */
export interface PeerHealth {
  readonly brokerId: string;
  /** Where the peer serves clients, as the registry last said (its `advertiseUrl`). */
  readonly url: string;
  /** It answered a probe within the staleness bound (the lease TTL). */
  readonly reachable: boolean;
  /** How long ago it last answered; `undefined` if it never did. */
  readonly lastSeenAgoMs: number | undefined;
}

/** This broker's own sight of the database: whether a read of the cluster got through lately. */
export interface DatabaseHealth {
  /** A read of the cluster succeeded within the staleness bound (the lease TTL). */
  readonly reachable: boolean;
  /** How long ago one last did; `undefined` if none ever did. Also the age of a view served stale. */
  readonly lastContactAgoMs: number | undefined;
  /** Why the last read failed, while the database is not reachable. */
  readonly lastError: string | undefined;
}

/** What `GET /v1/cluster` adds as `self`: the answering broker's own view, so a partition can be read off. */
export interface SelfHealth {
  readonly brokerId: string;
  readonly database: DatabaseHealth;
  /** Every other broker of the last view of the cluster this broker read, by id. */
  readonly peers: PeerHealth[];
}

/** What {@link ClusterHealth} needs. */
export interface ClusterHealthOptions {
  /** This broker's id in the registry. */
  readonly me: string;
  /** Past this without contact, the database or a peer counts as unreachable (the lease TTL). */
  readonly staleAfterMs: number;
  /** How often each peer is probed. */
  readonly probeEveryMs: number;
  /** Ask the peer at `url` whether it answers; rejects when it does not (bounded by `signal`). */
  readonly probe: (url: string, signal: AbortSignal) => Promise<void>;
  /** @default Date.now */
  readonly now?: () => number;
}

interface PeerState {
  url: string;
  lastSeenAt: number | undefined;
  probing: boolean;
}

/**
 * What this broker itself sees of the cluster, apart from what the database says: when it last
 * read the cluster from the database, and when each peer last answered a probe (`GET /healthz` at
 * its advertised URL). Brokers that see the same database but not each other, or one that sees
 * its peers but not the database, tell different stories here: that is how a partition is read off
 * `GET /v1/cluster`. It keeps the last view read, which the route serves, marked stale, while the
 * database does not answer.
 */
export class ClusterHealth {
  readonly #options: ClusterHealthOptions;
  readonly #now: () => number;
  readonly #peers = new Map<string, PeerState>();
  #lastContactAt: number | undefined;
  #lastError: string | undefined;
  #lastView: ClusterView | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: ClusterHealthOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** The last view of the cluster read from the database, if any. */
  get lastView(): ClusterView | undefined {
    return this.#lastView;
  }

  /** A read of the cluster got through: the database answered, and these are the brokers to probe. */
  viewRead(view: ClusterView): void {
    this.#lastContactAt = this.#now();
    this.#lastError = undefined;
    this.#lastView = view;
    const live = new Set<string>();
    for (const broker of view.brokers) {
      if (broker.brokerId === this.#options.me || broker.advertiseUrl === undefined) continue;
      live.add(broker.brokerId);
      const known = this.#peers.get(broker.brokerId);
      if (known === undefined)
        this.#peers.set(broker.brokerId, { url: broker.advertiseUrl, lastSeenAt: undefined, probing: false });
      else if (known.url !== broker.advertiseUrl) {
        known.url = broker.advertiseUrl;
        known.lastSeenAt = undefined;
      }
    }
    // A broker gone from the database's live list is no peer any more.
    for (const brokerId of [...this.#peers.keys()]) if (!live.has(brokerId)) this.#peers.delete(brokerId);
  }

  /** A read of the cluster failed: the database did not answer (or refused). */
  readFailed(error: unknown): void {
    this.#lastError = error instanceof Error ? error.message : String(error);
  }

  /** Probe every peer now and then every `probeEveryMs`, one probe per peer at a time. */
  start(): void {
    this.probeAll();
    this.#timer = setInterval(() => this.probeAll(), this.#options.probeEveryMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** One round of probes: each peer not being probed already, bounded by the staleness bound. */
  probeAll(): void {
    for (const peer of this.#peers.values()) {
      if (peer.probing) continue;
      peer.probing = true;
      const url = peer.url;
      this.#options
        .probe(url, AbortSignal.timeout(this.#options.staleAfterMs))
        .then(
          () => {
            if (peer.url === url) peer.lastSeenAt = this.#now();
          },
          () => {},
        )
        .finally(() => {
          peer.probing = false;
        });
    }
  }

  /** This broker's view now. */
  self(): SelfHealth {
    const now = this.#now();
    const ago = (at: number | undefined) => (at === undefined ? undefined : Math.max(0, now - at));
    const fresh = (at: number | undefined) => at !== undefined && now - at <= this.#options.staleAfterMs;
    const reachable = fresh(this.#lastContactAt);
    return {
      brokerId: this.#options.me,
      database: {
        reachable,
        lastContactAgoMs: ago(this.#lastContactAt),
        lastError: reachable ? undefined : this.#lastError,
      },
      peers: [...this.#peers.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([brokerId, peer]) => ({
          brokerId,
          url: peer.url,
          reachable: fresh(peer.lastSeenAt),
          lastSeenAgoMs: ago(peer.lastSeenAt),
        })),
    };
  }
}

/** Probe a broker at its advertised `ws(s)://` URL: any answer of its `GET /healthz` counts (503 while it drains too). */
export async function probeHealthz(url: string, signal: AbortSignal): Promise<void> {
  const response = await fetch(`${url.replace(/^ws/, 'http').replace(/\/+$/, '')}/healthz`, { signal });
  await response.body?.cancel();
}
