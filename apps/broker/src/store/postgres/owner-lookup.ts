import postgres from './driver.js';
import { queueConnection } from './queue-schema.js';
import { type LeaseHolder, leaseHolder } from './store-lease.js';

/** Where the store's owner serves clients, as a standby's relay asks for it. */
export interface OwnerLookup {
  /** The owner's advertised URL while its lease is live; `undefined` when none is (a takeover in progress). */
  find(): Promise<string | undefined>;
  /** The owner's advertised TCP URL while its lease is live, if it has a TCP listener. */
  findTcp(): Promise<string | undefined>;
  close(): Promise<void>;
}

/** Options of {@link openOwnerLookup}. */
export interface OwnerLookupOptions {
  /** The queue (`queue-schema.ts`) whose owner to find. @default 0 */
  readonly queue?: number;
}

/** How long an answer is reused: a burst of reconnecting clients costs one query. */
const ANSWER_TTL_MS = 200;

/** Read the lease row of a queue of the store at `url` on one connection of its own. */
export function openOwnerLookup(url: string, options: OwnerLookupOptions = {}): OwnerLookup {
  const sql = postgres(url, {
    max: 1,
    onnotice: () => {},
    connect_timeout: 10,
    connection: queueConnection(url, options.queue ?? 0),
  });
  let cached: { readonly at: number; readonly answer: Promise<LeaseHolder | undefined> } | undefined;
  /** The holder while its lease is live, read at most every {@link ANSWER_TTL_MS}. */
  const liveHolder = () => {
    const now = Date.now();
    if (cached && now - cached.at < ANSWER_TTL_MS) return cached.answer;
    const answer = leaseHolder(sql).then(
      (holder) => (holder && holder.expiresInMs > 0 ? holder : undefined),
      () => undefined,
    );
    cached = { at: now, answer };
    return answer;
  };
  return {
    find: async () => (await liveHolder())?.advertiseUrl,
    findTcp: async () => (await liveHolder())?.advertiseTcpUrl,
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}
