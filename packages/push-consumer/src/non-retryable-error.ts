/**
 * Thrown by a push listener for a failure no retry can cure (a malformed message, a record that
 * no longer exists): the message goes to the group's DLQ at once, whatever attempts remain, with
 * the error's message as its reason (rule X1; Temporal's non-retryable errors, BullMQ's
 * `UnrecoverableError`). Errors of other classes can be made non-retryable with the consumer's
 * `nonRetryable` option.
 *
 * @example
 * listener: (message) => {
 *   const order = parseOrder(message.text());
 *   if (order === undefined) throw new NonRetryableError('not an order', { cause: message.messageId });
 *   …
 * }
 * @see docs/semantics.md X1, D3
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/**
 * Whether a thrown value sends its message to the DLQ at once (X1): a {@link NonRetryableError},
 * or whatever the consumer's own `nonRetryable` accepts. A predicate that throws counts as "no":
 * the delivery then fails as any other, and is retried.
 */
export function isNonRetryable(error: unknown, accepts: ((error: unknown) => boolean) | undefined): boolean {
  if (error instanceof NonRetryableError) return true;
  if (accepts === undefined) return false;
  try {
    return accepts(error) === true;
  } catch {
    return false;
  }
}
