/**
 * How long a standby's relay holds a new client while no owner of the store can be reached (a
 * takeover in progress: the old owner's lease still running, or the new owner still loading), in
 * ms. Below the 20 s a client gives one connect attempt (rule C1's MIN_CONNECT_TIMEOUT), so the
 * client's attempt is still open when the relay gets through. Closing it at once instead made
 * every client fail attempt after attempt while its backoff grew, and come back seconds after the
 * new owner was serving.
 */
export const OWNER_WAIT_MS = 15_000;

/** Between two lookups of the owner while waiting; the lease row is read at most every 200 ms. */
const RETRY_MS = 250;

/** What {@link connectToOwner} needs. */
export interface OwnerConnectOptions<T> {
  /** The owner's URL while its lease is live. */
  readonly findOwner: () => Promise<string | undefined>;
  /** Open a connection to `owner`: the connection once open, `undefined` if it could not be. */
  readonly connect: (owner: string) => Promise<T | undefined>;
  /** How long to keep trying, in ms. */
  readonly waitMs: number;
  /** True once the client left (or the relay closed it): stop trying. */
  readonly gone: () => boolean;
}

/**
 * Connect one relayed client's upstream to the store's owner, looking the owner up again every
 * 250 ms while none is live or the one named cannot be reached, for up to `waitMs`. Resolves with
 * the open connection, or `undefined` when the time ran out or the client is gone.
 */
export async function connectToOwner<T>(options: OwnerConnectOptions<T>): Promise<T | undefined> {
  const deadline = performance.now() + options.waitMs;
  // Bounded: one lookup per RETRY_MS until the deadline.
  for (;;) {
    if (options.gone()) return undefined;
    const owner = await options.findOwner();
    if (owner !== undefined && !options.gone()) {
      const connection = await options.connect(owner);
      if (connection !== undefined) return connection;
    }
    if (options.gone() || performance.now() + RETRY_MS > deadline) return undefined;
    await new Promise<void>((resolve) => setTimeout(resolve, RETRY_MS).unref());
  }
}
