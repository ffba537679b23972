import type { BrokerStore } from '../../store/broker-store.js';
import { LeaseGate } from '../../store/postgres/store-lease.js';
import type { RemoteQueueParts } from '../routing/partition-router.js';
import type { ClusterView } from './cluster-view.js';

/**
 * Where a queue is routed now, as {@link QueueOwnership} reports it, and whether the last reading
 * of the cluster assigned it to this broker (`assigned`): a queue `here` but not `assigned` is
 * about to be handed over, one `assigned` but not `here` about to be taken.
 */
export type QueueRoute = { readonly queue: number; readonly assigned: boolean } & (
  | { readonly to: 'here' }
  | { readonly to: 'elsewhere'; readonly url: string; readonly owner: string }
  | { readonly to: 'nowhere' }
);

/**
 * Whether brokers sharing a store, each with `routes` as it shows them, have spread its queues:
 * every queue assigned to exactly one of them, each owning exactly the queues assigned to it, and
 * each routing every other queue to an owner. What a cluster just started (or joined) waits for.
 */
export function queuesSpread(routesOfEachBroker: readonly (readonly QueueRoute[])[]): boolean {
  const queues = routesOfEachBroker[0]?.length ?? 0;
  const assigned = routesOfEachBroker.flat().filter((route) => route.assigned).length;
  return (
    queues > 0 &&
    assigned === queues &&
    routesOfEachBroker.every((routes) =>
      routes.every((route) => route.to !== 'nowhere' && (route.to === 'here') === route.assigned),
    )
  );
}

export interface QueueOwnershipDeps {
  /** This broker's id in the registry and in lease rows. */
  readonly me: string;
  readonly queues: number;
  /** The live brokers, each queue's lease holder and its assignment, as the database has them. */
  readonly readView: () => Promise<ClusterView>;
  /**
   * Open a queue's store: keep a warm copy while another broker holds its lease, and resolve once
   * this broker holds it, which it takes only while `gate` is open. `onLost`: the store stopped
   * taking writes for good (taken over, or unreachable too long).
   */
  readonly openQueue: (
    queue: number,
    gate: LeaseGate,
    signal: AbortSignal,
    onLost: (error: unknown) => void,
  ) => Promise<BrokerStore>;
  /** A session between brokers to the owner of `queue` at `url`; `onClosed` when it ends. */
  readonly connect: (queue: number, url: string, onClosed: () => void) => Promise<RemoteQueueParts>;
  /** Where the router sends each queue's requests (`PartitionRouter.replaceQueue`). */
  readonly replaceQueue: (queue: number, parts: BrokerStore | RemoteQueueParts | undefined) => Promise<void>;
  /** How often the cluster is read again. */
  readonly pollMs: number;
  readonly onRoute?: (route: QueueRoute) => void;
  /** This broker took a queue's lease (`taken`), or stopped serving one it held (`givenUp`: handed over, or lost). */
  readonly onHandover?: (queue: number, direction: 'taken' | 'givenUp') => void;
  readonly onError: (error: unknown, context: string) => void;
}

interface QueueState {
  /** Routed to this broker's engine over a store whose lease it holds. */
  local: boolean;
  /** Routed to the owner at this URL. */
  remoteUrl: string | undefined;
  /** That owner's id in the registry, as a queue map names it. */
  remoteOwner: string;
  /**
   * The lease epoch of that owner. A new epoch is a new tenure, even of the same broker (it gave
   * the queue back and took it again): its engine is a new one, so the session is made again.
   */
  remoteEpoch: number;
  /** A store being opened (waiting for the lease, its copy kept warm). */
  opening: AbortController | undefined;
  /**
   * Whether the last reading of the cluster gave this broker the queue or made it one of its
   * standbys: only then does it keep a copy of the queue (a store being opened).
   */
  kept: boolean;
  /** Every change of route, one after the other: a lease taken while a session to the old owner opens, say. */
  changes: Promise<void>;
}

/**
 * Who serves each queue of a split store, among live brokers (DESIGN.md §9): each broker opens
 * the queues rendezvous hashing assigns it or makes it a standby of (`queue-assignment.ts`, over
 * the broker registry), keeping a warm copy of each, and takes the lease of those assigned to it;
 * the router sends a queue it owns to its engine, and any other to its owner, over a session
 * between brokers. Reading the cluster every {@link QueueOwnershipDeps.pollMs}, it moves queues as
 * brokers come and go:
 *
 * - a queue assigned here is taken when its lease is free: at once if given back, when its owner's
 *   liveness lock is free if the owner died, within the lease TTL if it hung. Its first standby is
 *   the broker it is assigned to once its owner goes, so a takeover finds its copy warm; a queue
 *   that falls to a broker without a copy (more brokers gone than it has standbys) is loaded
 *   from the database first;
 * - a queue of this broker assigned to another (a broker joined) is handed over as a clean stop
 *   does: its engine closes and its store gives the lease back, and the queue is opened again,
 *   warm, if this broker stands by for it;
 * - a queue this broker neither owns nor stands by for has no copy here: one being kept when the
 *   queue moved away is dropped;
 * - a queue owned elsewhere is routed there; while its owner changes it is routed nowhere, and
 *   its requests are answered `503`, which clients retry.
 *
 * The lease and its fence keep one writer per queue whatever this view says; the view only
 * decides who tries.
 */
export class QueueOwnership {
  readonly #deps: QueueOwnershipDeps;
  readonly #states: QueueState[];
  readonly #gates: LeaseGate[];
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #ticking = false;

  constructor(deps: QueueOwnershipDeps) {
    this.#deps = deps;
    this.#states = Array.from({ length: deps.queues }, () => ({
      local: false,
      remoteUrl: undefined,
      remoteOwner: '',
      remoteEpoch: 0,
      opening: undefined,
      kept: false,
      changes: Promise.resolve(),
    }));
    this.#gates = Array.from({ length: deps.queues }, () => new LeaseGate());
  }

  /** Read the cluster now and then every `pollMs`, opening the queues each reading gives this broker. */
  start(): void {
    void this.#tick();
    this.#timer = setInterval(() => void this.#tick(), this.#deps.pollMs);
    this.#timer.unref();
  }

  /** Where each queue is routed now. */
  routes(): QueueRoute[] {
    return this.#states.map((state, queue) => this.#routeOf(queue, state));
  }

  /**
   * Resolves once every queue is routed somewhere (to this broker's engine or to its owner), or
   * after `budgetMs`, with whether it was. A broker just started waits for this before it says it
   * listens: until its first look at the cluster and its first leases, every queue answers `503`.
   */
  async routedEverywhere(budgetMs: number): Promise<boolean> {
    const deadline = Date.now() + budgetMs;
    for (;;) {
      if (this.routes().every((route) => route.to !== 'nowhere')) return true;
      if (Date.now() >= deadline || this.#stopped) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Stop reading the cluster and opening queues; the router closes what it routes to. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    for (const state of this.#states) state.opening?.abort();
    await Promise.all(this.#states.map((state) => state.changes));
  }

  async #tick(): Promise<void> {
    if (this.#ticking || this.#stopped) return;
    this.#ticking = true;
    try {
      const view = await this.#deps.readView();
      if (this.#stopped) return;
      const urls = new Map(view.brokers.map((broker) => [broker.brokerId, broker.advertiseUrl]));
      for (const { queue, owner, epoch, assignedTo, standbys } of view.queues) {
        const state = this.#states[queue];
        const gate = this.#gates[queue];
        if (!state || !gate) continue;
        if (assignedTo === this.#deps.me) gate.open();
        else gate.close();
        state.kept = assignedTo === this.#deps.me || standbys.includes(this.#deps.me);
        if (state.kept) this.#openIfKept(queue, state);
        else if (state.opening !== undefined) this.#drop(state);
        if (state.local) {
          if (assignedTo !== undefined && assignedTo !== this.#deps.me)
            this.#change(queue, () => this.#handOver(queue));
          continue;
        }
        const url = owner === undefined || owner === this.#deps.me ? undefined : urls.get(owner);
        if (owner && url && (url !== state.remoteUrl || epoch !== state.remoteEpoch))
          this.#change(queue, () => this.#routeTo(queue, { url, owner }, epoch));
      }
    } catch (error) {
      this.#deps.onError(error, 'could not read the cluster; trying again');
    } finally {
      this.#ticking = false;
    }
  }

  /** Stop keeping a copy of a queue this broker neither owns nor stands by for any more. */
  #drop(state: QueueState): void {
    state.opening?.abort();
    state.opening = undefined;
  }

  /** Open a queue's store, waiting for its lease (taken only while assigned here), its copy kept warm. */
  #open(queue: number): void {
    const state = this.#states[queue] as QueueState;
    const opening = new AbortController();
    state.opening = opening;
    this.#deps
      .openQueue(queue, this.#gates[queue] as LeaseGate, opening.signal, (error) =>
        this.#change(queue, () => this.#lostLocal(queue, error)),
      )
      .then(
        // Dropped once its lease was taken (it moved away meanwhile): given back for its new owner.
        (store) =>
          this.#change(queue, () => (opening.signal.aborted ? store.close() : this.#takeOver(queue, store))),
        (error: unknown) => {
          if (opening.signal.aborted || this.#stopped) return;
          this.#deps.onError(error, `could not open queue ${queue}; trying again`);
          setTimeout(() => {
            if (state.opening === opening && !this.#stopped) this.#open(queue);
          }, this.#deps.pollMs).unref();
        },
      );
  }

  async #takeOver(queue: number, store: BrokerStore): Promise<void> {
    const state = this.#states[queue] as QueueState;
    state.opening = undefined;
    if (this.#stopped) {
      await store.close();
      return;
    }
    state.local = true;
    state.remoteUrl = undefined;
    this.#deps.onHandover?.(queue, 'taken');
    await this.#deps.replaceQueue(queue, store);
    this.#deps.onRoute?.(this.#routeOf(queue, state));
  }

  /** Give a queue assigned to another broker back, as a clean stop does, and wait warm for it again if a standby of it. */
  async #handOver(queue: number): Promise<void> {
    const state = this.#states[queue] as QueueState;
    if (!state.local || this.#stopped) return;
    state.local = false;
    this.#deps.onHandover?.(queue, 'givenUp');
    this.#gates[queue]?.close();
    await this.#deps.replaceQueue(queue, undefined);
    this.#deps.onRoute?.(this.#routeOf(queue, state));
    this.#openIfKept(queue, state);
  }

  /** This broker's store of the queue stopped taking writes: route it nowhere, and open it again. */
  async #lostLocal(queue: number, error: unknown): Promise<void> {
    const state = this.#states[queue] as QueueState;
    if (!state.local || this.#stopped) return;
    this.#deps.onError(error, `queue ${queue} was taken from this broker`);
    state.local = false;
    this.#deps.onHandover?.(queue, 'givenUp');
    await this.#deps.replaceQueue(queue, undefined);
    this.#deps.onRoute?.(this.#routeOf(queue, state));
    this.#openIfKept(queue, state);
  }

  /**
   * Open a queue this broker does not serve and has no copy of, if the last reading keeps it here
   * (a queue given up, or one it was just made owner or standby of; otherwise a later reading may).
   */
  #openIfKept(queue: number, state: QueueState): void {
    if (state.kept && !state.local && state.opening === undefined && !this.#stopped) this.#open(queue);
  }

  async #routeTo(
    queue: number,
    { url, owner }: { readonly url: string; readonly owner: string },
    epoch: number,
  ): Promise<void> {
    const state = this.#states[queue] as QueueState;
    if (state.local || (state.remoteUrl === url && state.remoteEpoch === epoch) || this.#stopped) return;
    let parts: RemoteQueueParts;
    try {
      parts = await this.#deps.connect(queue, url, () =>
        this.#change(queue, () => this.#lostRemote(queue, url, epoch)),
      );
    } catch (error) {
      this.#deps.onError(error, `could not reach the owner of queue ${queue} at ${url}; trying again`);
      return;
    }
    if (state.local || this.#stopped) {
      await parts.messaging.close();
      return;
    }
    state.remoteUrl = url;
    state.remoteOwner = owner;
    state.remoteEpoch = epoch;
    await this.#deps.replaceQueue(queue, parts);
    this.#deps.onRoute?.(this.#routeOf(queue, state));
  }

  async #lostRemote(queue: number, url: string, epoch: number): Promise<void> {
    const state = this.#states[queue] as QueueState;
    if (state.local || state.remoteUrl !== url || state.remoteEpoch !== epoch || this.#stopped) return;
    state.remoteUrl = undefined;
    await this.#deps.replaceQueue(queue, undefined);
    this.#deps.onRoute?.(this.#routeOf(queue, state));
  }

  /** Run a change of `queue`'s route after those before it; a failed one is reported, never thrown. */
  #change(queue: number, change: () => Promise<void>): void {
    const state = this.#states[queue] as QueueState;
    state.changes = state.changes.then(change).catch((error: unknown) => {
      this.#deps.onError(error, `could not change the route of queue ${queue}`);
    });
  }

  #routeOf(queue: number, state: QueueState): QueueRoute {
    const assigned = this.#gates[queue]?.isOpen ?? false;
    if (state.local) return { queue, assigned, to: 'here' };
    if (state.remoteUrl !== undefined)
      return { queue, assigned, to: 'elsewhere', url: state.remoteUrl, owner: state.remoteOwner };
    return { queue, assigned, to: 'nowhere' };
  }
}
