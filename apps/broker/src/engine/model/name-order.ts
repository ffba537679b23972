/** One page of a listing ordered by name (`GET /v1/topics`, `GET /v1/groups`). */
export interface NamePage<T> {
  readonly items: readonly T[];
  /** The last name of this page when more follow, else `null`. */
  readonly lastName: string | null;
}

/**
 * A registry's entries in the order of their names, for the listings by page (`GET /v1/topics`,
 * `GET /v1/groups`): UTF-16 code-unit order, not `localeCompare`, so the order and hence every
 * cursor stays the same whatever the broker's locale; `%DLQ%…` topics sort first.
 *
 * A page is a binary search and a slice. Entries added since the last page are sorted and merged
 * in when the next page is read, so a creation costs a push and a listing costs what changed since
 * the last one. Each page used to copy, filter and sort the whole registry: with a hundred thousand
 * entries that was a tenth of a second per page, and a listing of every page grew with the square
 * of the registry. Entries are never removed (nothing deletes a topic or a group) nor renamed.
 */
export class NameOrder<T extends { readonly name: string }> {
  /** Ascending by name. */
  #sorted: T[] = [];
  /** Added since the last page, in any order. */
  #added: T[] = [];

  /** A new entry; its name must not be in the order yet. */
  add(entry: T): void {
    this.#added.push(entry);
  }

  /**
   * Up to `limit` entries whose names sort strictly after `afterName` (from the first when it is
   * `undefined`), and the last name of the page when more follow it, else `null`.
   */
  page(afterName: string | undefined, limit: number): NamePage<T> {
    this.#mergeAdded();
    const start = afterName === undefined ? 0 : this.#firstAfter(afterName);
    const items = this.#sorted.slice(start, start + limit);
    const last = items.at(-1);
    return { items, lastName: start + limit < this.#sorted.length && last ? last.name : null };
  }

  #mergeAdded(): void {
    if (this.#added.length === 0) return;
    const added = this.#added.sort(byName);
    this.#added = [];
    const sorted = this.#sorted;
    const merged: T[] = new Array(sorted.length + added.length);
    let i = 0;
    let j = 0;
    for (let k = 0; k < merged.length; k++) {
      const next = sorted[i];
      const fresh = added[j];
      if (fresh === undefined || (next !== undefined && next.name < fresh.name)) {
        merged[k] = next as T;
        i++;
      } else {
        merged[k] = fresh;
        j++;
      }
    }
    this.#sorted = merged;
  }

  /** The index of the first entry whose name sorts after `name`. */
  #firstAfter(name: string): number {
    let low = 0;
    let high = this.#sorted.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((this.#sorted[middle]?.name ?? '') <= name) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

function byName(a: { readonly name: string }, b: { readonly name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
