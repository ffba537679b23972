import type { DeliveryAddress } from './records.js';

/**
 * A map keyed by delivery address (group, topic, offset), without building a key string per
 * lookup: the group and topic pick a lane (their names are hashed once per string), and the
 * offset, a number, finds the entry in it.
 *
 * Every push delivery and every settle looks up its address several times (write-behind records,
 * the push lease table, the store's pending overlay); a `group\0topic\0offset` string per lookup
 * had to be built, flattened and hashed each time, and showed in profiles of the consume path.
 * Lanes are kept once made: there is one per group and topic the broker has delivered from.
 */
export class DeliveryMap<TValue> {
  readonly #lanes = new Map<string, Map<string, Map<number, TValue>>>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(address: DeliveryAddress): TValue | undefined {
    return this.#lanes.get(address.group)?.get(address.topic)?.get(address.offset);
  }

  has(address: DeliveryAddress): boolean {
    return this.#lanes.get(address.group)?.get(address.topic)?.has(address.offset) ?? false;
  }

  set(address: DeliveryAddress, value: TValue): void {
    const lane = this.#lane(address);
    const before = lane.size;
    lane.set(address.offset, value);
    this.#size += lane.size - before;
  }

  delete(address: DeliveryAddress): boolean {
    const lane = this.#lanes.get(address.group)?.get(address.topic);
    if (!lane?.delete(address.offset)) return false;
    this.#size--;
    return true;
  }

  /** Every value, lane by lane. */
  *values(): IterableIterator<TValue> {
    for (const topics of this.#lanes.values()) {
      for (const lane of topics.values()) yield* lane.values();
    }
  }

  /** Remove every entry (the lanes stay, for the entries to come). */
  clear(): void {
    for (const topics of this.#lanes.values()) {
      for (const lane of topics.values()) lane.clear();
    }
    this.#size = 0;
  }

  #lane(address: DeliveryAddress): Map<number, TValue> {
    let topics = this.#lanes.get(address.group);
    if (!topics) {
      topics = new Map();
      this.#lanes.set(address.group, topics);
    }
    let lane = topics.get(address.topic);
    if (!lane) {
      lane = new Map();
      topics.set(address.topic, lane);
    }
    return lane;
  }
}
