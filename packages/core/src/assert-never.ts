/**
 * Marks a branch the type system proves unreachable, e.g. the `default` of an exhaustive `switch`.
 * @throws Error always: reaching it means a value escaped its declared type.
 */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`Unexpected ${what}: ${JSON.stringify(value)}`);
}
