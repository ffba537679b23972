import { DeliveryMap } from './delivery-map.js';
import type { DeliveryAddress } from './records.js';

/** Marks an address whose pending write is a deletion. */
const DELETED = Symbol('deleted');

/** What {@link PendingOverlay.read} answers when no write of the address is pending. */
export const NOT_PENDING = Symbol('not pending');

interface PendingWrite<TValue> {
  readonly value: TValue | typeof DELETED;
  readonly version: number;
}

/**
 * Read-your-writes for a store whose writes become visible only when their transaction commits.
 * Each write of a delivery record is recorded here until it commits; a read looks here first. A
 * later write to the same address replaces the entry, so an earlier commit never removes a newer
 * pending value.
 */
export class PendingOverlay<TValue> {
  readonly #entries = new DeliveryMap<PendingWrite<TValue>>();
  /** The writes waiting on each commit: one callback per transaction, not one per write. */
  readonly #byCommit = new Map<Promise<unknown>, { address: DeliveryAddress; version: number }[]>();
  #version = 0;

  /** Record a pending put (`value`) or delete (`undefined`) and forget it once `committed` settles. */
  track(address: DeliveryAddress, value: TValue | undefined, committed: Promise<unknown>): void {
    const version = ++this.#version;
    this.#entries.set(address, { value: value === undefined ? DELETED : value, version });
    let writes = this.#byCommit.get(committed);
    if (!writes) {
      const waiting: { address: DeliveryAddress; version: number }[] = [];
      const forget = () => {
        this.#byCommit.delete(committed);
        for (const write of waiting) {
          if (this.#entries.get(write.address)?.version === write.version)
            this.#entries.delete(write.address);
        }
      };
      committed.then(forget, forget);
      this.#byCommit.set(committed, waiting);
      writes = waiting;
    }
    writes.push({ address, version });
  }

  /** The pending value (`undefined` for a pending delete), or {@link NOT_PENDING}. */
  read(address: DeliveryAddress): TValue | undefined | typeof NOT_PENDING {
    const entry = this.#entries.get(address);
    if (!entry) return NOT_PENDING;
    return entry.value === DELETED ? undefined : entry.value;
  }

  /** Whether the pending write leaves a value (a put) or none (a delete); `undefined` when none is pending. */
  holds(address: DeliveryAddress): boolean | undefined {
    const entry = this.#entries.get(address);
    return entry === undefined ? undefined : entry.value !== DELETED;
  }

  get size(): number {
    return this.#entries.size;
  }
}
