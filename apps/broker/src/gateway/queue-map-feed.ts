import type { QueueMapFrame } from '@ricochet/protocol';

/** The transports whose sessions are told the queue map: those with a stream to push it on. */
export type QueueMapTransport = 'webSocket' | 'tcp';

/**
 * The queue map of a broker whose queues are spread over brokers, as the sessions of one transport
 * are told it (each owner's endpoint on that transport). The gateway owns this seam; the cluster,
 * which knows the routes, implements it (DESIGN.md §1: a lower folder owns the hook).
 */
export interface QueueMapFeed {
  /** The map now, or `undefined` while the broker has none to tell. */
  current(): QueueMapFrame | undefined;
  /**
   * Call `listener` after the map changed (a queue moved, an owner's endpoint changed).
   * @returns a function that stops the calls.
   */
  onChange(listener: () => void): () => void;
}

/** Where each transport's gateway finds its {@link QueueMapFeed}. */
export interface QueueMapFeeds {
  feed(transport: QueueMapTransport): QueueMapFeed;
}
