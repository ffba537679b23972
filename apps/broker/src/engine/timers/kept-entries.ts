import type { ScheduleEntry, ScheduleKey } from '../../store/records.js';
import { ScheduleOverlay } from './schedule-overlay.js';

/**
 * A schedule entry kept in memory only; `removed` once cancelled, dropped when it reaches the top.
 * A class, so that the scheduler tells the entries it took from memory from the store's by their kind.
 */
export class KeptEntry {
  removed = false;

  constructor(
    readonly key: ScheduleKey,
    readonly entry: ScheduleEntry,
  ) {}
}

/** One group's kept entries: a binary heap in key order, and the same entries by key. */
interface GroupEntries {
  readonly heap: KeptEntry[];
  readonly byKey: ScheduleOverlay;
}

/**
 * The schedule entries the scheduler keeps in memory and never writes (`recoverable` entries, see
 * `Scheduler.add`): each group's in key order, so that a pass reads its due ones from the top of a
 * heap, and by key, so that a removal finds one without a search. A removal marks the entry, which
 * leaves the heap when it reaches the top: every entry is due within the scheduler's horizon, so
 * marked ones wait there seconds at most.
 */
export class KeptEntries {
  readonly #groups = new Map<string, GroupEntries>();
  #size = 0;

  /** Entries kept and not removed. */
  get size(): number {
    return this.#size;
  }

  has(key: ScheduleKey): boolean {
    return this.#groups.get(key[0])?.byKey.has(key) ?? false;
  }

  /** Keep `entry` under `key`, which must not be kept already. */
  add(key: ScheduleKey, entry: ScheduleEntry): void {
    this.#insert(new KeptEntry(key, entry));
  }

  /** Forget the entry of `key`; false when none is kept under it (it is the store's, or gone). */
  remove(key: ScheduleKey): boolean {
    const group = this.#groups.get(key[0]);
    const kept = group?.byKey.get(key) as KeptEntry | undefined;
    if (!group || !kept) return false;
    group.byKey.delete(key);
    kept.removed = true;
    this.#size--;
    this.#dropRemovedTop(key[0], group);
    return true;
  }

  /** The due time of the group's earliest entry, if it has one. */
  earliest(group: string): number | undefined {
    return this.#groups.get(group)?.heap[0]?.key[1];
  }

  /**
   * Take up to `limit` of the group's entries due at `nowMs`, earliest first: they are no longer
   * kept. The scheduler hands them on, and gives back ({@link putBack}) those not taken from it.
   */
  takeDue(group: string, nowMs: number, limit: number): KeptEntry[] {
    const entries = this.#groups.get(group);
    if (!entries || (entries.heap[0]?.key[1] ?? Number.POSITIVE_INFINITY) > nowMs) return [];
    const { heap, byKey } = entries;
    const taken: KeptEntry[] = [];
    while (taken.length < limit && heap.length > 0 && (heap[0] as KeptEntry).key[1] <= nowMs) {
      const top = popKept(heap);
      if (top.removed) continue;
      byKey.delete(top.key);
      taken.push(top);
    }
    this.#size -= taken.length;
    this.#dropRemovedTop(group, entries);
    return taken;
  }

  /** Keep again an entry {@link takeDue} took. */
  putBack(kept: KeptEntry): void {
    this.#insert(kept);
  }

  #insert(kept: KeptEntry): void {
    const group = kept.key[0];
    let entries = this.#groups.get(group);
    if (!entries) {
      entries = { heap: [], byKey: new ScheduleOverlay() };
      this.#groups.set(group, entries);
    }
    entries.byKey.set(kept);
    pushKept(entries.heap, kept);
    this.#size++;
  }

  /** Pop the marked entries off the top, so that the top is a live entry; forget an emptied group. */
  #dropRemovedTop(group: string, entries: GroupEntries): void {
    const { heap } = entries;
    while (heap.length > 0 && (heap[0] as KeptEntry).removed) popKept(heap);
    if (heap.length === 0) this.#groups.delete(group);
  }
}

/** Schedule keys in due order: due time, then topic, then offset (the store's order of a group's keys). */
export function compareKeys(a: ScheduleKey, b: ScheduleKey): number {
  if (a[1] !== b[1]) return a[1] - b[1];
  if (a[2] !== b[2]) return a[2] < b[2] ? -1 : 1;
  return a[3] - b[3];
}

function pushKept(heap: KeptEntry[], kept: KeptEntry): void {
  let at = heap.length;
  heap.push(kept);
  while (at > 0) {
    const parent = (at - 1) >> 1;
    if (compareKeys((heap[parent] as KeptEntry).key, kept.key) <= 0) break;
    heap[at] = heap[parent] as KeptEntry;
    at = parent;
  }
  heap[at] = kept;
}

function popKept(heap: KeptEntry[]): KeptEntry {
  const top = heap[0] as KeptEntry;
  const last = heap.pop() as KeptEntry;
  if (heap.length === 0) return top;
  let at = 0;
  for (;;) {
    const left = 2 * at + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child =
      right < heap.length && compareKeys((heap[right] as KeptEntry).key, (heap[left] as KeptEntry).key) < 0
        ? right
        : left;
    if (compareKeys((heap[child] as KeptEntry).key, last.key) >= 0) break;
    heap[at] = heap[child] as KeptEntry;
    at = child;
  }
  heap[at] = last;
  return top;
}
