/**
 * Why a message went to its group's DLQ, machine-readable (rule X6), beside the human reason:
 *
 * - `maxRetries`: its failures used up `maxRetries` (P4, S5);
 * - `consumptionTimeout`: as `maxRetries`, the last failure being the broker's consumption timeout (P2);
 * - `retryBudget`: its next retry would fall past the group's `maxRetryDurationMs` (X2);
 * - `deadLetterNow`: the consumer asked for it (D3);
 * - `nonRetryable`: the listener threw a non-retryable error (X1).
 *
 * New causes may be added: a reader should show one it does not know as it is.
 */
export type DeadLetterCause =
  | 'maxRetries'
  | 'consumptionTimeout'
  | 'retryBudget'
  | 'deadLetterNow'
  | 'nonRetryable';

/** Every {@link DeadLetterCause}, in the order of the rules that give them. */
export const DEAD_LETTER_CAUSES: readonly DeadLetterCause[] = [
  'maxRetries',
  'consumptionTimeout',
  'retryBudget',
  'deadLetterNow',
  'nonRetryable',
];

/**
 * X2: whether a retry due at `nextAtMs` falls more than `maxRetryDurationMs` after the message's
 * first delivery. Never, without a budget, or for a record stored before first deliveries were
 * recorded (its budget is unknown, so it keeps RocketMQ's rule alone).
 */
export function retryBudgetSpent(
  firstDeliveredAtMs: number | undefined,
  nextAtMs: number,
  maxRetryDurationMs: number | undefined,
): boolean {
  if (maxRetryDurationMs === undefined || firstDeliveredAtMs === undefined) return false;
  return nextAtMs - firstDeliveredAtMs > maxRetryDurationMs;
}
