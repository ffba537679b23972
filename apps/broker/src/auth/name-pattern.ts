/**
 * A name pattern of the auth file (DESIGN.md §7): an exact topic or group name, or a prefix ending in
 * `*` (`payments-*`, `%DLQ%billing-*`; `*` alone matches every name). `*` appears nowhere else, so
 * a pattern never means more than it reads.
 */
export const NAME_PATTERN_REGEX = /^(?:[A-Za-z0-9_.%-]{1,127}|[A-Za-z0-9_.%-]{0,126}\*)$/;

/** Whether `name` matches `pattern` (exact, or starts with the prefix before a trailing `*`). */
export function matchesNamePattern(pattern: string, name: string): boolean {
  if (pattern.endsWith('*')) return name.startsWith(pattern.slice(0, -1));
  return pattern === name;
}

/** Whether any of `patterns` matches `name`. */
export function matchesAnyNamePattern(patterns: readonly string[], name: string): boolean {
  for (const pattern of patterns) if (matchesNamePattern(pattern, name)) return true;
  return false;
}
