/**
 * A span of virtual time: milliseconds, or a string of numbers with units, largest first, as a
 * retry schedule is written: `'500ms'`, `'10s'`, `'1m'` (or `'1min'`), `'2h'`, `'1d'`, `'1h30m'`,
 * `'1m 40s'`.
 */
export type Duration = number | string;

const UNIT_MS = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
} as const satisfies Record<string, number>;

type Unit = keyof typeof UNIT_MS;

/** Units in the order a duration names them; `m` and `min` are the same rank. */
const RANK: Readonly<Record<Unit, number>> = { d: 0, h: 1, m: 2, min: 2, s: 3, ms: 4 };

const PART = /(\d+(?:\.\d+)?)\s*(ms|min|s|m|h|d)\s*/y;

/**
 * The milliseconds of a {@link Duration}.
 *
 * @throws RangeError when `duration` is negative, not finite, not a whole number of milliseconds,
 *   or a string that is not numbers with units, each unit once and largest first.
 */
export function durationMs(duration: Duration): number {
  if (typeof duration === 'number') return checkedMs(duration, String(duration));
  const text = duration.trim();
  if (text === '') throw new RangeError('a duration string must not be empty');
  let totalMs = 0;
  let lastRank = -1;
  PART.lastIndex = 0;
  while (PART.lastIndex < text.length) {
    const at = PART.lastIndex;
    const match = PART.exec(text);
    if (!match)
      throw new RangeError(
        `'${duration}' is not a duration: expected e.g. '10s', '2h', '1h30m' at '${text.slice(at)}'`,
      );
    const unit = match[2] as Unit;
    if (RANK[unit] <= lastRank)
      throw new RangeError(`'${duration}': units must go from largest to smallest, each once`);
    lastRank = RANK[unit];
    // 1.1 × 1000 is 1100.0000000000002 in binary floating point: round away what is not really there.
    const partMs = Number(match[1]) * UNIT_MS[unit];
    const roundedMs = Math.round(partMs);
    totalMs += Math.abs(partMs - roundedMs) < 1e-6 ? roundedMs : partMs;
  }
  return checkedMs(totalMs, `'${duration}'`);
}

function checkedMs(ms: number, shown: string): number {
  if (!Number.isFinite(ms) || ms < 0)
    throw new RangeError(`a duration must be finite and >= 0, got ${shown}`);
  if (!Number.isInteger(ms)) throw new RangeError(`a duration must be a whole number of ms, got ${shown}`);
  return ms;
}

/** `6040000` → `'1h 40m 40s'`: how the kit's messages show a span of virtual time. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const parts: string[] = [];
  let rest = Math.abs(ms);
  for (const [unit, size] of [
    ['d', UNIT_MS.d],
    ['h', UNIT_MS.h],
    ['m', UNIT_MS.m],
    ['s', UNIT_MS.s],
    ['ms', UNIT_MS.ms],
  ] as const) {
    const count = Math.floor(rest / size);
    if (count > 0) parts.push(`${count}${unit}`);
    rest -= count * size;
  }
  return `${ms < 0 ? '-' : ''}${parts.join(' ')}`;
}
