/** Marks a key whose pending write is a deletion. */
const DELETED = Symbol('deleted');

/**
 * Read-your-writes for a store whose writes become visible only when their transaction commits.
 * Each write is recorded here until it commits; a read looks here first. A later write to the
 * same key replaces the entry, so an earlier commit never removes a newer pending value.
 */
export class PendingOverlay<TValue> {
  readonly #entries = new Map<string, { value: TValue | typeof DELETED; version: number }>();
  /** The writes waiting on each commit: one callback per transaction, not one per write. */
  readonly #byCommit = new Map<Promise<unknown>, { key: string; version: number }[]>();
  #version = 0;

  /** Record a pending put (`value`) or delete (`undefined`) and forget it once `committed` settles. */
  track(key: string, value: TValue | undefined, committed: Promise<unknown>): void {
    const version = ++this.#version;
    this.#entries.set(key, { value: value === undefined ? DELETED : value, version });
    let writes = this.#byCommit.get(committed);
    if (!writes) {
      const waiting: { key: string; version: number }[] = [];
      const forget = () => {
        this.#byCommit.delete(committed);
        for (const write of waiting) {
          if (this.#entries.get(write.key)?.version === write.version) this.#entries.delete(write.key);
        }
      };
      committed.then(forget, forget);
      this.#byCommit.set(committed, waiting);
      writes = waiting;
    }
    writes.push({ key, version });
  }

  /** `{ hit: false }` when nothing is pending for the key; otherwise the pending value. */
  read(key: string): { hit: false } | { hit: true; value: TValue | undefined } {
    const entry = this.#entries.get(key);
    if (!entry) return { hit: false };
    return { hit: true, value: entry.value === DELETED ? undefined : entry.value };
  }

  get size(): number {
    return this.#entries.size;
  }
}
