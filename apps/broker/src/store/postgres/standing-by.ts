import type { Sql } from './driver.js';
import { type FeedFollowing, followFeed, type StandbyFeedOptions } from './standby-feed.js';
import type { LeaseHolder } from './store-lease.js';
import { keepWarm, type WarmCopy, type Warming, type WarmingHooks, type WarmPace } from './warm-copy.js';

/**
 * How often a standby reads what changed in the database into its local copy: often while the
 * queue takes writes, so that each read copies few (`keepWarm`), rarely while it takes none or
 * while the owner's feed brings the writes.
 */
const WARM_PACE: WarmPace = { busyMs: 50, idleMs: 1_000 };

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
          if (open === feedOpen) return;
          feedOpen = open;
          feed.onFollowing?.(queue, open, ownerUrl ?? '');
        },
      });
      ownerUrl = feed.ownerUrl?.(queue, holder) ?? holder.advertiseUrl;
      following.ownerAt(ownerUrl);
    },
    async stop() {
      following?.stop();
      await warming?.stop();
      // Batches the feed brought before it stopped are applied by now.
      await copy.settled();
    },
  };
}
