const SECOND_MS = 1_000;
const MINUTE_MS = 60 * SECOND_MS;

/**
 * RocketMQ's 18 delay levels, accepted as `delayLevel` 1–18 on send (rule T1):
 * 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h.
 */
export const DELAY_LEVELS_MS: readonly number[] = Object.freeze([
  1 * SECOND_MS,
  5 * SECOND_MS,
  10 * SECOND_MS,
  30 * SECOND_MS,
  1 * MINUTE_MS,
  2 * MINUTE_MS,
  3 * MINUTE_MS,
  4 * MINUTE_MS,
  5 * MINUTE_MS,
  6 * MINUTE_MS,
  7 * MINUTE_MS,
  8 * MINUTE_MS,
  9 * MINUTE_MS,
  10 * MINUTE_MS,
  20 * MINUTE_MS,
  30 * MINUTE_MS,
  60 * MINUTE_MS,
  120 * MINUTE_MS,
]);

/**
 * The delay of a RocketMQ delay level (1-based), or `undefined` when the level does not exist.
 */
export function delayLevelToMs(level: number): number | undefined {
  if (!Number.isInteger(level) || level < 1) return undefined;
  return DELAY_LEVELS_MS[level - 1];
}
