import { DeliveryMap } from '../../store/delivery-map.js';
import type { DeliveryAddress, DeliveryRecord } from '../../store/records.js';

/**
 * Records the cache holds at most, per engine (so per queue of a spread store). A WaitingRetry is
 * read back when its retry falls due, a few hundred milliseconds to minutes after it was written:
 * this many covers a burst of ten thousand failures (W4) with room, and at a few hundred bytes a
 * record it costs a few megabytes. Past it the oldest are forgotten, and reading one of those
 * back costs a store read, as it did before there was a cache.
 */
export const DURABLE_RECORD_CACHE_RECORDS = 16_384;

interface Cached {
  readonly record: DeliveryRecord;
  /** Which write this is: an eviction removes the entry only if no later write replaced it. */
  readonly seq: number;
}

interface Written {
  readonly address: DeliveryAddress;
  readonly seq: number;
}

/**
 * The delivery records this process wrote to the store at once (`now` durability: a failure's
 * WaitingRetry with its schedule entry, a simple lease's changed deadline), kept as written, so
 * that reading one back — its retry falling due, its lease settled — is a map lookup instead of a
 * store read and a decode (about 3 % of the broker's CPU in W4's retries, where every due retry
 * read its record back).
 *
 * It is only ever a copy of what the store holds or is committing: the delivery records are the
 * store's only writer of these records, and they drop an entry whenever the record changes in
 * any other way (a state buffered behind, a delete) or its write fails. A crash loses nothing: the store has every
 * record, and recovery reads it as before. Bounded by {@link DURABLE_RECORD_CACHE_RECORDS}, oldest
 * write first out.
 */
export class DurableRecordCache {
  readonly #records = new DeliveryMap<Cached>();
  /** The writes in the order they came, as a ring: the next slot is the oldest write's. */
  readonly #order: (Written | undefined)[];
  #next = 0;
  #seq = 0;

  constructor(readonly capacity = DURABLE_RECORD_CACHE_RECORDS) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a whole number ≥ 1');
    this.#order = new Array<Written | undefined>(capacity);
  }

  /** Records held now. */
  get size(): number {
    return this.#records.size;
  }

  get(address: DeliveryAddress): DeliveryRecord | undefined {
    return this.#records.get(address)?.record;
  }

  has(address: DeliveryAddress): boolean {
    return this.#records.has(address);
  }

  /** `record` was just written to the store for `address`: keep it, forgetting the oldest write if full. */
  set(address: DeliveryAddress, record: DeliveryRecord): void {
    const oldest = this.#order[this.#next];
    if (oldest !== undefined && this.#records.get(oldest.address)?.seq === oldest.seq) {
      this.#records.delete(oldest.address);
    }
    const seq = ++this.#seq;
    this.#order[this.#next] = { address, seq };
    this.#next = (this.#next + 1) % this.capacity;
    this.#records.set(address, { record, seq });
  }

  /** The write of `record` failed: forget it, unless a later write replaced it. */
  forget(address: DeliveryAddress, record: DeliveryRecord): void {
    if (this.#records.get(address)?.record === record) this.#records.delete(address);
  }

  /** The record of `address` changed other than by a write at once, or went: forget it. */
  delete(address: DeliveryAddress): void {
    this.#records.delete(address);
  }
}
