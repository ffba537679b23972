import type { Sql } from './driver.js';
import { type FeedFollowing, followFeed, type StandbyFeedOptions } from './standby-feed.js';
import type { LeaseHolder } from './store-lease.js';
import type { WarmCopy } from './warm-copy.js';

/**
 * How often a standby reads what changed in the database into its local copy: often while the
 * queue takes writes, so that each read copies few (`keepWarm`), rarely while it takes none, and
 * more rarely still while the owner's feed brings the writes. Then a read finds nothing the feed
 * and the reads at its opening and on a gap did not bring: it is insurance, and each one reads
 * every topic's frontier (a standby of a queue with many topics paid that every second).
 */
const WARM_PACE: WarmPace = { busyMs: 50, idleMs: 1_000, followingMs: 10_000 };

/** What a standby does while it waits for the lease ({@link standBy}). */
export interface StandingBy {
  /** Another broker holds the lease (told before each wait): keep the copy warm, following it. */
  holderSeen(holder: LeaseHolder): void;
  /** The wait is over (the lease taken, or given up): stop following and reading. */
  stop(): Promise<void>;
}

/**
 * A standby's copy, kept close to the store while another broker owns it, so that taking over
 * reads only what changed: from the owner's feed (`standby-feed.ts`) when the cluster has one and
 * the owner serves it, a batch applied as it commits; and by reading the database (`keepWarm`),
 * often without the feed, rarely with it, and at once when the feed missed a batch. Nothing runs
 * until the first holder is seen: a broker that takes the lease at once never stands by.
 */
export function standBy(
  copy: WarmCopy,
  reader: Sql,
  queue: number,
  hooks: WarmingHooks,
  feed: StandbyFeedOptions | undefined,
): StandingBy {
  let warming: Warming | undefined;
  let following: FeedFollowing | undefined;
  /** The owner's feed is open: the copy follows it, and reads the database rarely. */
  let feedOpen = false;
  let ownerUrl: string | undefined;
  /** The wait is over: the feed's end is this broker's doing, not news. */
  let stopped = false;
  return {
    holderSeen(holder) {
      warming ??= keepWarm(copy, reader, WARM_PACE, hooks, () => feedOpen);
      if (feed === undefined) return;
      following ??= followFeed(queue, feed, {
        batch: async (batch) => {
          const applied = await copy.apply(batch);
          if (applied === 'gap') warming?.catchUpNow();
          return applied;
        },
        connected: (open) => {
          if (stopped || open === feedOpen) return;
          feedOpen = open;
          // Opened: read now what committed before the stream did, which the feed never sends.
          // Closed: the copy no longer follows it, and reads at the pace without a feed.
          warming?.catchUpNow();
          feed.onFollowing?.(queue, open, ownerUrl ?? '');
        },
      });
      ownerUrl = feed.ownerUrl?.(queue, holder) ?? holder.advertiseUrl;
      following.ownerAt(ownerUrl);
    },
    async stop() {
      stopped = true;
      following?.stop();
      await warming?.stop();
      // Batches the feed brought before it stopped are applied by now.
      await copy.settled();
    },
  };
}

/** A copy kept warm in the background (see {@link keepWarm}). */
export interface Warming {
  /** Stop after the step in progress, if any: resolves once it ended. */
  stop(): Promise<void>;
  /** Step now rather than at the next interval: the owner's feed missed a batch. */
  catchUpNow(): void;
}

/** What {@link keepWarm} tells. */
export interface WarmingHooks {
  /** The first step (the messages and history, whole) is done, after `elapsedMs`. */
  readonly onLoaded?: (elapsedMs: number) => void;
  /** A step failed, the first of a run of failures (it is tried again at the next interval). */
  readonly onError?: (error: unknown) => void;
}

/**
 * How often a copy is caught up: every `followingMs` while it follows the owner's feed; otherwise
 * every `busyMs` while the last step found rows to copy, every `idleMs` after one that found none.
 */
export interface WarmPace {
  readonly busyMs: number;
  readonly idleMs: number;
  /** @default idleMs */
  readonly followingMs?: number;
}

/**
 * Catch `copy` up until stopped, at `pace`: the first step loads the messages and history whole,
 * each later one reads what changed. While the queue takes writes the steps come close together,
 * so that each copies a few of them: a step's work holds the event loop for as long as it takes to
 * copy what it read (tens of µs a message), and a second's writes at once would stall every
 * client of the broker for that long. An idle queue is read rarely, and one whose owner's feed the
 * copy follows (`following`, `standby-feed.ts`) more rarely still: the feed brings its writes, and
 * the step only finds what the feed had not brought yet. The feed opening or closing, and a batch
 * it missed, call {@link Warming.catchUpNow}.
 */
export function keepWarm(
  copy: WarmCopy,
  sql: Sql,
  pace: WarmPace,
  hooks: WarmingHooks = {},
  following: () => boolean = () => false,
): Warming {
  let stopped = false;
  let failing = false;
  let wake: (() => void) | undefined;
  /** A step was asked for while one ran: the next starts without waiting. */
  let stepAgain = false;
  const startedAt = performance.now();
  // Bounded by stop(): one step per interval (or per request of the feed) until then.
  const running = (async () => {
    while (!stopped) {
      stepAgain = false;
      const wasLoaded = copy.loaded;
      let intervalMs = pace.idleMs;
      try {
        const found = await copy.catchUp(sql);
        if (following()) intervalMs = pace.followingMs ?? pace.idleMs;
        else if (found > 0) intervalMs = pace.busyMs;
        failing = false;
        if (!wasLoaded) hooks.onLoaded?.(performance.now() - startedAt);
      } catch (error) {
        if (!failing) hooks.onError?.(error);
        failing = true;
      }
      if (stopped) return;
      if (stepAgain) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake?.();
      await running;
    },
    catchUpNow() {
      stepAgain = true;
      wake?.();
    },
  };
}
