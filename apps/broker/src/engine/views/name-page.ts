/** One page of a listing ordered by name (`GET /v1/topics`, `GET /v1/groups`). */
export interface NamePage<T> {
  readonly items: readonly T[];
  /** The last name of this page when more follow, else `null`. */
  readonly lastName: string | null;
}

/**
 * Up to `limit` items whose names sort strictly after `afterName` (all of them when it is
 * `undefined`), in UTF-16 code-unit order. Code-unit order, not `localeCompare`, so the order and
 * hence every cursor stays the same whatever the broker's locale; `%DLQ%…` topics sort first.
 *
 * The registries hold a few thousand entries at most, in memory, so filtering and sorting them per
 * page costs microseconds and needs no index that could fall out of step with the registry.
 */
export function pageByName<T extends { readonly name: string }>(
  items: Iterable<T>,
  afterName: string | undefined,
  limit: number,
): NamePage<T> {
  const after = [...items].filter((item) => afterName === undefined || item.name > afterName);
  after.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const page = after.slice(0, limit);
  const last = page.at(-1);
  return { items: page, lastName: after.length > limit && last ? last.name : null };
}
