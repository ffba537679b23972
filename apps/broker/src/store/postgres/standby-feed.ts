import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Packr, unpack } from 'msgpackr';
import type { ExpiredMessage } from '../records.js';
import type { LeaseHolder } from './store-lease.js';
import type { FeedApplied } from './warm-copy.js';
import type { CommittedWrites } from './write-pipeline.js';

/**
 * The feed from a queue's owner to its standbys (issue 42, item 2): each batch the owner commits,
 * what it wrote of the tables a standby follows (messages, history, retention's deletes) with its
 * position (the highest `seq` before and after it), sent over HTTP to every standby that asked,
 * so that a standby's warm copy follows the owner without reading the database for it.
 *
 * The database stays the one truth: a standby applies a batch only when its copy holds everything
 * before it (`WarmCopy.apply`), and reads from the database, by position, whatever it missed (it
 * connected late, fell behind, or its owner changed) and whatever came before its first load. So
 * the feed may lose batches without harm, and fencing is untouched: a batch is sent after its
 * commit, and a deposed owner commits nothing.
 *
 * The wire: `GET /v1/store/feed` with `ricochet-queue: <q>` and the cluster's peer token
 * (`cluster/standby/feed-route.ts`), answered by a stream of frames, each a 4-byte big-endian
 * length then one batch in MessagePack: `{ from, to, expired, messages, history }` as
 * {@link CommittedWrites} has them, the rows as their packed values.
 */

/** The route a standby asks its owner's feed at (with the queue header and the peer token). */
export const FEED_PATH = '/v1/store/feed';
/**
 * What the owner lets one standby leave unread before it cuts the stream: the standby then reads
 * what it missed from the database (by position) and asks again. A standby never makes the owner
 * hold more than this for it.
 */
export const MAX_UNREAD_FEED_BYTES = 16 * 1_048_576;

/** How long a standby waits before asking again after its owner's feed ended or failed. */
const RECONNECT_MS = 1_000;

/** Batches a standby holds, decoded and waiting for its copy, before it stops reading the stream. */
const MAX_WAITING_BATCHES = 64;

/** Plain MessagePack: brokers of different versions read each other's frames. */
const packr = new Packr({ useRecords: false });

/** One batch as a frame of the feed. */
export function encodeFeedFrame(batch: CommittedWrites): Buffer {
  const payload = packr.pack({
    from: batch.from,
    to: batch.to,
    expired: batch.expired,
    messages: batch.messages,
    history: batch.history,
  });
  const frame = Buffer.allocUnsafe(4 + payload.length);
  frame.writeUInt32BE(payload.length, 0);
  payload.copy(frame, 4);
  return frame;
}

/**
 * The frames of a feed's byte stream, as they complete. The chunks of a frame are kept as they
 * came and joined once, when the frame is whole: a batch of large messages arrives in hundreds of
 * chunks, and joining at each one would copy it hundreds of times.
 */
export class FeedFrameReader {
  #chunks: Buffer[] = [];
  #bytes = 0;

  /** The batches `chunk` completes. @throws Error for a frame that is not a batch. */
  push(chunk: Buffer): CommittedWrites[] {
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    const batches: CommittedWrites[] = [];
    // Bounded by the bytes held: each turn takes a whole frame off them, or stops.
    while (this.#bytes >= 4) {
      const length = this.#head(4).readUInt32BE(0);
      if (this.#bytes < 4 + length) break;
      const held = this.#head(this.#bytes);
      batches.push(batchOf(unpack(held.subarray(4, 4 + length))));
      const rest = held.subarray(4 + length);
      this.#chunks = rest.length === 0 ? [] : [rest];
      this.#bytes = rest.length;
    }
    return batches;
  }

  /** The first chunk, joined with the next ones until it holds at least `bytes`. */
  #head(bytes: number): Buffer {
    const first = this.#chunks[0] as Buffer;
    if (first.length >= bytes) return first;
    const joined = Buffer.concat(this.#chunks);
    this.#chunks = [joined];
    return joined;
  }
}

function batchOf(value: unknown): CommittedWrites {
  const batch = value as Partial<Record<keyof CommittedWrites, unknown>> | null;
  if (
    typeof batch?.from !== 'number' ||
    typeof batch.to !== 'number' ||
    !Array.isArray(batch.expired) ||
    !Array.isArray(batch.messages) ||
    !Array.isArray(batch.history)
  ) {
    throw new Error('a feed frame that is not a batch');
  }
  return {
    from: batch.from,
    to: batch.to,
    expired: batch.expired as ExpiredMessage[],
    messages: batch.messages as Uint8Array[],
    history: batch.history as [string, Uint8Array][],
  };
}

/**
 * The owner's side: the standbys following each queue this broker owns, and the batches its
 * stores commit, written to them. A store publishes only while it owns its queue (it commits
 * nothing otherwise), and ends its queue's streams when it stops owning it.
 */
export class FeedHub {
  readonly #followers = new Map<number, Set<ServerResponse>>();
  /** Set once the broker closes its HTTP server: no stream is kept or opened from then on. */
  #ended = false;

  /** Whether any standby follows `queue` now: a batch nobody reads is not encoded. */
  followed(queue: number): boolean {
    return (this.#followers.get(queue)?.size ?? 0) > 0;
  }

  /** Send `batch`, committed on `queue`, to every standby following it. */
  publish(queue: number, batch: CommittedWrites): void {
    const followers = this.#followers.get(queue);
    if (followers === undefined || followers.size === 0) return;
    const frame = encodeFeedFrame(batch);
    for (const response of followers) {
      // A standby that reads too slowly is cut: it reads what it missed from the database.
      if (response.writableLength > MAX_UNREAD_FEED_BYTES) response.destroy();
      else response.write(frame);
    }
  }

  /** Stream `queue`'s batches into `response` (a route's, already answered 200) until it closes. */
  follow(queue: number, response: ServerResponse): void {
    if (this.#ended) {
      response.end();
      return;
    }
    let followers = this.#followers.get(queue);
    if (followers === undefined) {
      followers = new Set();
      this.#followers.set(queue, followers);
    }
    followers.add(response);
    response.once('close', () => followers.delete(response));
  }

  /** This broker no longer owns `queue`: end its standbys' streams (they ask the new owner). */
  unfollowAll(queue: number): void {
    for (const response of this.#followers.get(queue) ?? []) response.end();
    this.#followers.delete(queue);
  }

  /**
   * The broker closes its HTTP server, which waits for every response to end: end the streams
   * now, and any asked for later. Its standbys read the last commits from the database.
   */
  end(): void {
    this.#ended = true;
    for (const queue of [...this.#followers.keys()]) this.unfollowAll(queue);
  }
}

/** What a store needs to take part in the feed, on either side. */
export interface StandbyFeedOptions {
  /**
   * The headers a standby's request for `queue`'s feed carries: what the owner's route asks of a
   * broker (the queue, the cluster's peer token), as the cluster's admin calls between brokers
   * send them (`cluster/peers/queue-scope.ts`).
   */
  readonly requestHeaders: (queue: number) => Readonly<Record<string, string>>;
  /** Where this broker's stores publish their commits while they own their queue. */
  readonly hub: FeedHub;
  /**
   * Where the owner of `queue`, `holder` of its lease, serves: a broker of a spread cluster
   * advertises itself in the broker registry rather than in the lease row. @default the URL the
   * lease row gives (`holder.advertiseUrl`)
   */
  readonly ownerUrl?: (queue: number, holder: LeaseHolder) => string | undefined;
  /** The standby began following its owner's feed (`true`), or the feed ended (`false`). */
  readonly onFollowing?: (queue: number, following: boolean, ownerUrl: string) => void;
}

/** What the owner's feed tells a standby that follows it. */
export interface FeedListener {
  /** A batch, in commit order: resolves with what the copy did with it. */
  batch(batch: CommittedWrites): Promise<FeedApplied>;
  /** The stream opened (`true`) or ended (`false`): while it is open, the copy follows the owner. */
  connected(open: boolean): void;
}

/** A standby's following of its owner's feed ({@link followFeed}). */
export interface FeedFollowing {
  /** The owner changed (or said where it serves): follow the feed there from now on. */
  ownerAt(url: string | undefined): void;
  /** Stop following, and close the stream. */
  stop(): void;
}

/**
 * A standby's side: follow the feed of `queue`'s owner at the URL it advertises, handing each
 * batch to `listener` in order, and asking again a second after the stream ends (the owner
 * restarted, changed, cut a standby that fell behind, or serves no feed: an older broker). Frames
 * are read no faster than the copy applies them.
 */
export function followFeed(
  queue: number,
  options: StandbyFeedOptions,
  listener: FeedListener,
): FeedFollowing {
  let url: string | undefined;
  let current: { close(): void } | undefined;
  let retry: NodeJS.Timeout | undefined;
  let stopped = false;

  const connect = () => {
    retry = undefined;
    const target = stopped || url === undefined ? undefined : feedUrlAt(url);
    if (target === undefined) return;
    const request = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, {
      headers: options.requestHeaders(queue),
    });
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (current === connection) current = undefined;
      listener.connected(false);
      // Bounded by stop(): one attempt a second at most.
      if (!stopped && retry === undefined) retry = setTimeout(connect, RECONNECT_MS);
    };
    const connection = {
      close: () => {
        request.destroy();
        end();
      },
    };
    current = connection;
    request.once('error', end);
    request.once('response', (response: IncomingMessage) => {
      if (response.statusCode !== 200) {
        response.resume();
        response.once('end', end);
        return;
      }
      listener.connected(true);
      readBatches(response, listener, connection.close);
      response.once('close', end);
    });
    request.end();
  };

  const cancelRetry = () => {
    if (retry !== undefined) clearTimeout(retry);
    retry = undefined;
  };
  return {
    ownerAt(next) {
      if (next === url) return;
      url = next;
      current?.close();
      // Closing planned a retry at the old URL: the new one is asked at once instead.
      cancelRetry();
      connect();
    },
    stop() {
      stopped = true;
      cancelRetry();
      current?.close();
    },
  };
}

/** The feed's URL at an owner that serves clients at `url` (`ws://`, `wss://`, or `http(s)://`). */
function feedUrlAt(url: string): URL | undefined {
  try {
    return new URL(FEED_PATH, url.replace(/^ws/, 'http'));
  } catch {
    // Not a URL (a lease row written by hand, or by a release that wrote something else there):
    // no feed, the database alone.
    return undefined;
  }
}

/** Hand the stream's batches to `listener` in order, pausing it while many wait for the copy. */
function readBatches(response: IncomingMessage, listener: FeedListener, fail: () => void): void {
  const reader = new FeedFrameReader();
  let waiting = 0;
  response.on('data', (chunk: Buffer) => {
    let batches: CommittedWrites[];
    try {
      batches = reader.push(chunk);
    } catch {
      // Not a feed: read from the database, and ask again later.
      fail();
      return;
    }
    for (const batch of batches) {
      waiting++;
      void listener.batch(batch).then(
        () => {
          waiting--;
          if (waiting < MAX_WAITING_BATCHES / 2 && response.isPaused()) response.resume();
        },
        () => {
          waiting--;
          fail();
        },
      );
    }
    if (waiting >= MAX_WAITING_BATCHES) response.pause();
  });
}
