import { type Connection, otherOwnerEndpoints } from '@ricochet/client';
import { OWNED_SUBSCRIPTIONS_FEATURE, type QueueMapFrame } from '@ricochet/protocol';
import type { FlowControl } from './flow-control.js';
import { OwnerLink, type OwnerLinkDeps } from './owner-link.js';

/** What {@link OwnerLinks} needs beyond what each link does. */
export interface OwnerLinksDeps extends Omit<OwnerLinkDeps, 'share' | 'onLost' | 'onFirstSubscribed'> {
  /** The links changed: the consumer's own subscription takes `share` now, and may change scope. */
  readonly onChange: () => void;
}

/**
 * A push consumer's sessions with the queue owners other than its `endpoint` broker
 * (docs/protocol/README.md#owned-subscriptions), following the queue map its own session is told:
 * one {@link OwnerLink} per owner the map names, opened when a map first names it and retired
 * when one no longer does. The consumer's own subscription is owned-scope only while
 * {@link ownedScope} holds: its session was granted `ownedSubscriptions` and every other owner the
 * map names has a link whose subscription was answered, so that every queue has a subscription
 * that delivers from it. Else it spans every queue, as before, and its broker forwards. Waiting
 * for the answers keeps the consumer subscribed at every queue while it moves onto the owners: a
 * broadcasting instance (B1) is never absent from an owner, to be forgotten there.
 *
 * A consumer places no message, so the map's placement rule does not matter here: only who owns
 * which queue, and where they are.
 *
 * `maxCachedBytes` is split evenly over the consumer's subscriptions ({@link share}), and so is
 * `maxCachedMessages` for a subscription whose broker does not grant `creditLending`, so that all
 * of them together never hold more than the consumer's bounds (but for one delivery each when
 * there are more owners than `maxCachedMessages`). The subscriptions that borrow share the rest
 * of `maxCachedMessages` as one pool (`CreditLoans`), lent where the work is, retries first (P3).
 */
export class OwnerLinks {
  readonly #home: Connection;
  readonly #deps: OwnerLinksDeps;
  readonly #links = new Map<string, OwnerLink>();
  readonly #retiring = new Set<Promise<void>>();
  readonly #stopListening: (() => void)[];
  #map: QueueMapFrame | undefined;
  /** Links are made only while the consumer runs. */
  #active = false;
  /** The own subscription moved onto its broker's queues ({@link ownedScope}). */
  #moved = false;

  constructor(home: Connection, deps: OwnerLinksDeps) {
    this.#home = home;
    this.#deps = deps;
    this.#stopListening = [
      home.onFrame('queueMap', (map) => {
        this.#map = map;
        this.#follow();
      }),
      // A session that grants no map (failed over to an older broker): the last map may be stale for good.
      home.onReconnected(() => {
        if (!this.#granted) this.#map = undefined;
        this.#follow();
      }),
    ];
  }

  /**
   * Whether the consumer's own subscription is to be owned-scope now (see the class). The move
   * waits for every owner's answer; once made, it holds while every owner has a link, so a link
   * made again later (its owner restarted, or the map named another) does not move the own
   * subscription back over every queue and forward meanwhile. Without a link to every owner it
   * is over every queue, and the next move waits for the answers again.
   */
  get ownedScope(): boolean {
    this.#moved = this.#movable() && (this.#moved || this.#answeredByEveryOwner());
    return this.#moved;
  }

  /** Each subscription's share of the consumer's bounds: one for its own, one per link. */
  share(): { readonly messages: number; readonly bytes: number } {
    const subscriptions = 1 + this.#links.size;
    return {
      messages: Math.max(1, Math.floor(this.#deps.options.maxCachedMessages / subscriptions)),
      bytes: Math.max(1, Math.floor(this.#deps.options.maxCachedBytes / subscriptions)),
    };
  }

  /** The consumer runs: follow the map from now on. */
  activate(): void {
    this.#active = true;
    this.#follow();
  }

  /** The links' sides of the consumer's credit. */
  flows(): FlowControl[] {
    return [...this.#links.values()].map((link) => link.flow);
  }

  /** The listeners ran out of work: each link's window may be what they wait for. */
  starved(): void {
    for (const link of this.#links.values()) link.starved();
  }

  /** Closing, first step: every link stops its deliveries, and hands back what it cached. */
  async unsubscribe(): Promise<void> {
    this.#active = false;
    for (const stop of this.#stopListening) stop();
    await Promise.all([...this.#links.values()].map((link) => link.unsubscribe()));
    for (const link of this.#links.values()) link.releaseCached();
  }

  /** Closing, last step: send what the links' results are, and close their sessions. */
  async close(): Promise<void> {
    const links = [...this.#links.values()];
    this.#links.clear();
    await Promise.all([...links.map((link) => link.close()), ...this.#retiring]);
  }

  /** Whether every owner the map names has a link, on a session that grants the owned scope. */
  #movable(): boolean {
    if (!this.#active || !this.#granted || this.#map === undefined) return false;
    const named = this.#map.owners.filter((owner) => owner !== null && owner !== this.#map?.broker);
    // An owner without an endpoint on this transport is reached only through the own session.
    if (named.some((owner) => this.#map?.endpoints[owner as string] === undefined)) return false;
    return [...otherOwnerEndpoints(this.#map)].every((endpoint) => this.#links.has(endpoint));
  }

  #answeredByEveryOwner(): boolean {
    return [...this.#links.values()].every((link) => link.subscribedOnce);
  }

  get #granted(): boolean {
    return this.#home.session?.features.includes(OWNED_SUBSCRIPTIONS_FEATURE) === true;
  }

  #follow(): void {
    const wanted = this.#active && this.#granted ? otherOwnerEndpoints(this.#map) : new Set<string>();
    let changed = false;
    for (const [endpoint, link] of this.#links) {
      if (wanted.has(endpoint) && !link.closed) continue;
      this.#links.delete(endpoint);
      changed = true;
      const retiring = link.retire();
      this.#retiring.add(retiring);
      void retiring.finally(() => this.#retiring.delete(retiring));
    }
    for (const endpoint of wanted) {
      if (this.#links.has(endpoint)) continue;
      const link = this.#linkTo(endpoint);
      if (link === undefined) continue;
      this.#links.set(endpoint, link);
      changed = true;
      link.open();
    }
    if (changed) {
      const { messages } = this.share();
      for (const link of this.#links.values()) link.resize(messages);
    }
    this.#deps.onChange();
  }

  /** A link to `endpoint`, or `undefined` when it is not one this client can open (it stays unlinked). */
  #linkTo(endpoint: string): OwnerLink | undefined {
    try {
      return new OwnerLink(endpoint, {
        ...this.#deps,
        share: () => this.share(),
        onLost: () => this.#follow(),
        onFirstSubscribed: () => this.#deps.onChange(),
      });
    } catch {
      return undefined;
    }
  }
}
