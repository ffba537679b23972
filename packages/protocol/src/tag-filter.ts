import { TAG_PATTERN } from './names.js';

/** A parsed subscription expression: every message, or those whose tag is in the set. */
export type TagFilter =
  | { readonly type: 'all' }
  | { readonly type: 'tags'; readonly tags: ReadonlySet<string> };

/** The outcome of {@link parseTagFilter}. */
export type TagFilterParse =
  | { readonly ok: true; readonly filter: TagFilter }
  | { readonly ok: false; readonly message: string };

/**
 * Parse a RocketMQ tag expression: `*` (every message) or tags joined by `||`, spaces allowed
 * around them (`created || paid`).
 */
export function parseTagFilter(expression: string): TagFilterParse {
  const trimmed = expression.trim();
  if (trimmed === '*') return { ok: true, filter: { type: 'all' } };
  const tags = trimmed.split('||').map((tag) => tag.trim());
  const bad = tags.find((tag) => !TAG_PATTERN.test(tag));
  if (bad !== undefined) {
    return {
      ok: false,
      message: `"${expression}" is not a tag expression: use "*" or tags joined by "||" (bad tag "${bad}")`,
    };
  }
  return { ok: true, filter: { type: 'tags', tags: new Set(tags) } };
}

/** Whether a message with `tag` passes `filter`; an untagged message passes only `*`. */
export function matchesTagFilter(filter: TagFilter, tag: string | undefined): boolean {
  return filter.type === 'all' || (tag !== undefined && filter.tags.has(tag));
}
