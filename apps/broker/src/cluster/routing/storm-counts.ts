import type { OutcomeCounts } from '@ricochet/core';
import type { GroupView, TimerHandle, TimerService } from '../../engine/index.js';
import type { RoutedQueue } from './routed-queue.js';

/** How often a broker tells its queues what the group's other queues count: a storm trips within it. */
export const STORM_COUNTS_INTERVAL_MS = 250;
/**
 * Up to this many groups with the rule on, a queue owned elsewhere is asked for each by name;
 * past it, for its whole list of groups (pages of {@link GROUPS_PER_PAGE}), which then costs less.
 */
const DESCRIBED_PER_QUEUE = 16;
/** Groups listed per page when the queues are asked for theirs. */
const GROUPS_PER_PAGE = 500;
/** A bound on the pages read per queue and round: 10 000 groups. */
const MAX_PAGES = 20;

export interface StormCountsDeps {
  /** Every queue as routed now. */
  readonly queues: () => readonly RoutedQueue[];
  readonly timers: TimerService;
  readonly onError: (error: unknown, context: string) => void;
}

/**
 * The failure-storm rule (DESIGN.md §11) over a group spread over several queues (DESIGN.md §9):
 * each queue's engine keeps the group's breaker over its own deliveries, and every
 * {@link STORM_COUNTS_INTERVAL_MS} this broker tells each queue it owns what the group's other
 * queues count in their windows — read from the engines it owns, and from the owners of the rest
 * through their admin API — so the breaker trips on the whole group's outcomes. A round costs what
 * the groups with the rule on do, whatever the number of groups: the engines keep those apart
 * (an idle cluster of three brokers with 3,000 groups, one with the rule on, spent about 0.4 CPU
 * a broker listing every group of every queue four times a second). Each broker does
 * the same for its own queues, so every queue of the group hears every other, wherever it is.
 *
 * Core trips a queue's breaker on the whole group's window only while that queue's own outcomes
 * fail too, so a queue that recovered (its probe succeeded) is not paused again by the failures
 * still counted in the windows of queues that wait for their probe. A queue that does not answer
 * counts nothing this round. Rounds never overlap, and a broker whose groups all have the rule off
 * asks no other broker anything.
 */
export class StormCounts {
  readonly #deps: StormCountsDeps;
  #timer: TimerHandle | undefined;
  #stopped = false;

  constructor(deps: StormCountsDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#stopped = false;
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** One round: ask every queue for the group counts of the groups with the rule on, and share them. */
  async round(): Promise<void> {
    const queues = this.#deps.queues();
    const first = queues.find((queue) => queue.engine !== undefined)?.engine;
    if (first === undefined) return;
    // Every queue holds every group's config: the first engine here knows which have the rule on.
    const firstWindows = first.stormWindows();
    const ruled = [...firstWindows.keys()];
    if (ruled.length === 0) return;
    // Per queue, per group with the rule on: what its window counts now.
    const perQueue = await Promise.all(
      queues.map((queue) => (queue.engine === first ? firstWindows : windowsOf(queue, ruled))),
    );
    for (const [index, queue] of queues.entries()) {
      if (!queue.engine) continue;
      for (const name of ruled) {
        let successes = 0;
        let failures = 0;
        for (const [other, counts] of perQueue.entries()) {
          const count = other === index ? undefined : counts.get(name);
          successes += count?.successes ?? 0;
          failures += count?.failures ?? 0;
        }
        queue.engine.countedElsewhere(name, { successes, failures });
      }
    }
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#deps.timers.setTimer(STORM_COUNTS_INTERVAL_MS, () => {
      this.round()
        .catch((error: unknown) => this.#deps.onError(error, 'sharing failure-storm counts failed'))
        .finally(() => this.#schedule());
    });
  }
}

/**
 * What the windows of the `ruled` groups count on `queue`: from its engine when this broker owns
 * it; from its owner otherwise, one `describeGroup` per group while they are few, else its
 * groups listed page by page. A queue that does not answer counts nothing.
 */
async function windowsOf(queue: RoutedQueue, ruled: readonly string[]): Promise<Map<string, OutcomeCounts>> {
  if (queue.engine !== undefined) return queue.engine.stormWindows();
  const counts = new Map<string, OutcomeCounts>();
  if (ruled.length <= DESCRIBED_PER_QUEUE) {
    const views = await Promise.all(
      ruled.map((name) => queue.admin('describeGroup', name).catch(() => undefined)),
    );
    for (const view of views) if (view?.pause?.counted) counts.set(view.name, view.pause.counted);
    return counts;
  }
  const wanted = new Set(ruled);
  for (const group of await listEvery(queue).catch(() => [])) {
    if (wanted.has(group.name) && group.pause?.counted) counts.set(group.name, group.pause.counted);
  }
  return counts;
}

/** Every group of a queue, page by page, bounded. */
async function listEvery(queue: RoutedQueue): Promise<GroupView[]> {
  const groups: GroupView[] = [];
  let after: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const listed = await queue.admin('listGroups', after, GROUPS_PER_PAGE);
    groups.push(...listed.items);
    if (listed.lastName === null) break;
    after = listed.lastName;
  }
  return groups;
}
