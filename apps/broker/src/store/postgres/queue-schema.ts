/**
 * A database may hold several independent stores, its *queues*, each owned by a broker of its own.
 * Each queue is a PostgreSQL schema, not a column or a name prefix, so that every query of the
 * store stays as it is: a queue's connections set `search_path` to its schema alone, and every
 * unqualified name (the tables, `ricochet_lease`, the `ricochet_fence` function, the
 * `ricochet_row_seq` sequence, `ricochet_meta` and its layout version) resolves inside it. A queue
 * is then a whole store, with its own lease, epoch, fence and layout, taken over on its own.
 *
 * Queue 0 is the store as it was before queues: the connection's default `search_path`, so a
 * database written before, and brokers that know nothing of queues, keep working with it.
 */

/** How many queues a database may hold: 0 to `QUEUE_COUNT - 1`. */
export const QUEUE_COUNT = 64;

/** Throw unless `queue` is the number of a queue. */
export function checkQueue(queue: number): void {
  if (!Number.isInteger(queue) || queue < 0 || queue >= QUEUE_COUNT) {
    throw new RangeError(`a store queue is an integer from 0 to ${QUEUE_COUNT - 1}, not ${queue}`);
  }
}

/** The schema `queue` lives in; `undefined` for queue 0, which lives in the default one. */
export function queueSchema(queue: number): string | undefined {
  checkQueue(queue);
  return queue === 0 ? undefined : `ricochet_q${queue}`;
}

/**
 * The postgres.js `connection` parameters that put a session of the database at `url` in
 * `queue`'s schema: none for queue 0.
 *
 * postgres.js lets a `search_path` in the URL's query override these: a queue would then silently
 * be queue 0's store, under the same lease, so such a URL is refused for the other queues.
 */
export function queueConnection(url: string, queue: number): { readonly search_path?: string } {
  const schema = queueSchema(queue);
  if (schema === undefined) return {};
  const query = url.split('?')[1] ?? '';
  if (new URLSearchParams(query).has('search_path')) {
    throw new Error(`the store URL sets search_path, which would put queue ${queue} outside ${schema}`);
  }
  return { search_path: schema };
}
