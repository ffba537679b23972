import { PLACEMENT_RULE, QUEUE_MAP_FEATURE, type QueueMapFrame, queueOfMessage } from '@ricochet/protocol';
import { ClientError } from './client-error.js';
import { Connection } from './connection.js';
import type { ConnectionOptions } from './connection-options.js';

/**
 * How long a connection to an owner that is no longer one lets its in-flight requests be answered
 * before it closes: they were sent to a broker that still forwards (a queue moved away from it),
 * so their answers are worth waiting for; anything still open after it is sent again elsewhere.
 */
const RETIRED_ROUTE_DRAIN_MS = 5_000;

/** A connection to one owner, opened when a map first named it. */
interface OwnerLink {
  readonly connection: Connection;
}

/** How an {@link OwnerRoutes} opens its connections. */
export interface OwnerRoutesOptions {
  /**
   * The features each owner's connection asks for instead of the client's own: none for a
   * producer, `ownedReceives` for a simple consumer ({@link OwnerRoutes.ownerSessions}). @default none
   */
  readonly linkFeatures?: readonly string[];
  /**
   * Open the owners' connections only once {@link OwnerRoutes.activate} is called, not when the
   * first map arrives: a simple consumer opens them once its `start()` succeeded, so that one
   * whose start is refused (an unknown group, a denied principal) holds no session beyond its own.
   * @default false: at the first map
   */
  readonly untilActivated?: boolean;
}

/**
 * The routes of a client that talks to queue owners (DESIGN.md §9, docs/protocol/README.md#queue-map):
 * the queue map its connection's session is told (`queueMap` frames, on a session granted the
 * feature), and a connection of its own to each owner the map names, opened as soon as the map
 * names it. {@link connectionFor} picks the connection a message goes on: its queue's owner's when
 * that connection is open, else the client's own connection, whose broker forwards it. So a route
 * is only ever a shortcut: without a map (an older broker, a broker of one store, HTTP), with a
 * placement rule this client does not know, with an owner not yet connected or gone, every message
 * goes where it went before.
 *
 * A connection to a broker that owns nothing any more is retired: closed after its in-flight
 * requests had {@link RETIRED_ROUTE_DRAIN_MS} to be answered. What fails on a route because its
 * connection closed is a stale route, for the caller to send again ({@link isStaleRoute}).
 */
export class OwnerRoutes {
  readonly #home: Connection;
  readonly #options: ConnectionOptions;
  readonly #linkFeatures: readonly string[];
  readonly #links = new Map<string, OwnerLink>();
  /** Whether the owners' connections are opened (see {@link OwnerRoutesOptions.untilActivated}). */
  #active: boolean;
  /** Retired connections still draining: `close()` waits for them too. */
  readonly #retiring = new Set<Promise<void>>();
  #map: QueueMapFrame | undefined;
  #closed = false;
  readonly #stopListening: (() => void)[];

  /**
   * @param home - the client's connection, opened with the `queueMap` feature.
   * @param options - the client's connection options; each owner's connection takes them with the
   *   owner's endpoint, and without the features the client's own asks for (one session tells the map).
   */
  constructor(home: Connection, options: ConnectionOptions, routes: OwnerRoutesOptions = {}) {
    this.#home = home;
    this.#options = options;
    this.#linkFeatures = routes.linkFeatures ?? [];
    this.#active = routes.untilActivated !== true;
    this.#stopListening = [
      home.onFrame('queueMap', (map) => this.#apply(map)),
      // A session with a broker that grants no map (failed over to an older one): the last map's
      // owners may be stale for good, and nothing would tell of a change.
      home.onReconnected(() => {
        if (!home.session?.features.includes(QUEUE_MAP_FEATURE)) this.#apply(undefined);
      }),
    ];
  }

  /** The map in use, if any. */
  get map(): QueueMapFrame | undefined {
    return this.#map;
  }

  /** Open the connections the map calls for, now and from now on ({@link OwnerRoutesOptions.untilActivated}). */
  activate(): void {
    if (this.#active) return;
    this.#active = true;
    this.#apply(this.#map);
  }

  /**
   * The connection a message goes on: its queue's owner's when the map names an owner other than
   * the broker of the client's own connection and the connection to it is open; else the client's own.
   */
  connectionFor(message: {
    readonly messageId: string;
    readonly messageGroup?: string | undefined;
  }): Connection {
    const map = this.#map;
    if (map === undefined) return this.#home;
    const owner = map.owners[queueOfMessage(message, map.queues)];
    if (owner === null || owner === undefined || owner === map.broker) return this.#home;
    const link = this.#linkOf(map, owner);
    return link?.connection.currentStatus.state === 'connected' ? link.connection : this.#home;
  }

  /**
   * The sessions that together reach every queue's owner, each once: the client's own for the
   * queues of the map's `broker`, and the connection to each other owner. `undefined` unless every
   * queue has an owner whose session is open and was granted `feature`: while a queue is between
   * owners, an owner is not yet connected, or an owner is older, the caller goes through its own
   * connection, whose broker forwards.
   */
  ownerSessions(feature: string): Connection[] | undefined {
    const map = this.#map;
    if (map === undefined) return undefined;
    const sessions = new Set<Connection>();
    for (const owner of map.owners) {
      if (owner === null) return undefined;
      const connection = owner === map.broker ? this.#home : this.#linkOf(map, owner)?.connection;
      if (connection?.currentStatus.state !== 'connected') return undefined;
      if (connection.session?.features.includes(feature) !== true) return undefined;
      sessions.add(connection);
    }
    return [...sessions];
  }

  /**
   * Whether `error`, from a request on `connection`, means the route went stale rather than that
   * the broker refused: the connection to an owner closed under it (the owner stopped or died, or
   * the client retired the route). The request is to be sent again, on the route the map gives now.
   */
  isStaleRoute(connection: Connection, error: unknown): boolean {
    if (connection === this.#home || !(error instanceof ClientError)) return false;
    return error.code === 'CONNECTION_CLOSED' || error.code === 'CLIENT_CLOSED';
  }

  /** Close every connection to an owner; the client's own connection is its caller's to close. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const stop of this.#stopListening) stop();
    this.#map = undefined;
    const links = [...this.#links.values()];
    this.#links.clear();
    await Promise.all([
      ...links.map((link) => link.connection.close({ drainTimeoutMs: 0 })),
      ...this.#retiring,
    ]);
  }

  /** The connection to `owner`, made when a map named it at its endpoint here. */
  #linkOf(map: QueueMapFrame, owner: string): OwnerLink | undefined {
    const endpoint = map.endpoints[owner];
    return endpoint === undefined ? undefined : this.#links.get(endpoint);
  }

  #apply(map: QueueMapFrame | undefined): void {
    if (this.#closed) return;
    // A rule this client does not know would place messages where the broker does not: route nothing.
    this.#map = map?.placement === PLACEMENT_RULE ? map : undefined;
    // Not active yet: the map is kept for activate(), and every message goes home meanwhile.
    if (!this.#active) return;
    const wanted = otherOwnerEndpoints(this.#map);
    for (const [endpoint, link] of this.#links) {
      // Retired, or closed for good (its first connect timed out): a later map may name it again.
      if (wanted.has(endpoint) && link.connection.currentStatus.state !== 'closed') continue;
      this.#links.delete(endpoint);
      const closing = link.connection.close({ drainTimeoutMs: RETIRED_ROUTE_DRAIN_MS });
      this.#retiring.add(closing);
      void closing.finally(() => this.#retiring.delete(closing));
    }
    for (const endpoint of wanted) {
      if (this.#links.has(endpoint)) continue;
      const connection = this.#connectionTo(endpoint);
      if (connection === undefined) continue;
      this.#links.set(endpoint, { connection });
      // Until it opens (and if it never does) the messages of its queues go home, forwarded.
      connection.connect().catch(() => {});
    }
  }

  /** A connection to an owner, or `undefined` when its endpoint is not one this client can open. */
  #connectionTo(endpoint: string): Connection | undefined {
    const { features: _, ...options } = this.#options;
    const features = this.#linkFeatures.length === 0 ? {} : { features: [...this.#linkFeatures] };
    try {
      return new Connection({ ...options, ...features, endpoint });
    } catch {
      // A scheme this client has no transport for (say, tcp:// in a browser): forwarded instead.
      return undefined;
    }
  }
}

/**
 * The endpoints of the queue owners a map names, but for the broker that sent it (reached on the
 * session that was told the map): those a client opens a session of its own with, to send to
 * (`OwnerRoutes`) or to take deliveries from (a push consumer's owned subscriptions).
 * @see docs/protocol/README.md#queue-map
 */
export function otherOwnerEndpoints(map: QueueMapFrame | undefined): Set<string> {
  const endpoints = new Set<string>();
  for (const owner of map?.owners ?? []) {
    if (owner === null || owner === map?.broker) continue;
    const endpoint = map?.endpoints[owner];
    if (endpoint !== undefined) endpoints.add(endpoint);
  }
  return endpoints;
}
