/**
 * Helpers for the status feeds of the clients (`status()` of a connection, producer or consumer).
 * They take any status with a `state`, so the testkit needs no client package: the client
 * packages depend on the testkit, and an edge back would be a cycle.
 */

/** What these helpers need of a status: `ConnectionStatus` fits. */
export interface StateStatus {
  readonly state: string;
}

/** Something with a status feed: a connection, a producer or a consumer. */
export interface StatusSource<TStatus extends StateStatus> {
  status(): AsyncIterable<TStatus>;
}

/** The next status of `client` in state `wanted` (or matching it), ending the feed after it. */
export function nextStatus<TStatus extends StateStatus>(
  client: StatusSource<TStatus>,
  wanted: TStatus['state'] | ((status: TStatus) => boolean),
): Promise<TStatus> {
  const matches = typeof wanted === 'function' ? wanted : (status: TStatus) => status.state === wanted;
  const iterator = client.status()[Symbol.asyncIterator]();
  return (async () => {
    for (;;) {
      const result = await iterator.next();
      if (result.done) throw new Error('the status feed ended first');
      if (matches(result.value)) {
        await iterator.return?.();
        return result.value;
      }
    }
  })();
}

/** Every status of `client` from now on, collected until its feed ends (`ended` resolves then). */
export function recordStatuses<TStatus extends StateStatus>(
  client: StatusSource<TStatus>,
): { readonly statuses: TStatus[]; readonly ended: Promise<void> } {
  const statuses: TStatus[] = [];
  const iterable = client.status();
  const ended = (async () => {
    for await (const status of iterable) statuses.push(status);
  })();
  return { statuses, ended };
}
