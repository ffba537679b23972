/** A duration for people: `250ms`, `10s`, `1m30s`, `2h`, `1d`. */
export function formatDurationMs(ms: number): string {
  if (ms < 1_000) return `${ms}ms`;
  const units: readonly [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ];
  let rest = Math.round(ms);
  let text = '';
  for (const [unit, size] of units) {
    const count = Math.floor(rest / size);
    if (count > 0) text += `${count}${unit}`;
    rest -= count * size;
  }
  return rest > 0 ? `${text}${rest}ms` : text;
}

/** A time as ISO 8601 UTC with milliseconds, or `-` when absent. */
export function formatTime(ms: number | undefined): string {
  return ms === undefined ? '-' : new Date(ms).toISOString();
}

/**
 * A body for a terminal: UTF-8 text as it is (JSON pretty-printed when `pretty`), anything else as
 * hex, cut to `maxBytes` with a note.
 */
export function previewBody(body: Uint8Array, options: { maxBytes?: number; pretty?: boolean } = {}): string {
  const maxBytes = options.maxBytes ?? 1_024;
  const shown = body.subarray(0, maxBytes);
  const more = body.byteLength > maxBytes ? ` … (${body.byteLength} bytes)` : '';
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(shown);
  } catch {
    return `hex ${Buffer.from(shown).toString('hex')}${more}`;
  }
  // Control characters other than tab and newline would scramble the terminal: show hex instead.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: that is exactly what it looks for
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(text))
    return `hex ${Buffer.from(shown).toString('hex')}${more}`;
  if (options.pretty === true && more === '') {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // not JSON: shown as text
    }
  }
  return `${text}${more}`;
}

/** A stepped or fixed policy's jitter (X3), when it has one: `, jitter 0.2`. */
function jitterOf(fields: Record<string, unknown>): string {
  return typeof fields.jitter === 'number' && fields.jitter > 0 ? `, jitter ${fields.jitter}` : '';
}

/** A retry policy in one line: `stepped 10s 30s 1m …`, `fixed 3s`, `exponential 1s ×2 ≤ 1m ±0.2`. */
export function describeRetryPolicy(policy: unknown): string {
  if (typeof policy !== 'object' || policy === null) return JSON.stringify(policy);
  const fields = policy as Record<string, unknown>;
  switch (fields.type) {
    case 'stepped': {
      const delays = Array.isArray(fields.delaysMs) ? (fields.delaysMs as number[]) : [];
      return `stepped ${delays.map(formatDurationMs).join(' ')} (the last repeats)${jitterOf(fields)}`;
    }
    case 'fixed':
      return `fixed ${formatDurationMs(Number(fields.delayMs))}${jitterOf(fields)}`;
    case 'exponential':
      return `exponential ${formatDurationMs(Number(fields.initialMs))} ×${fields.multiplier} up to ${formatDurationMs(
        Number(fields.maxMs),
      )}, jitter ${fields.jitter}`;
    default:
      return JSON.stringify(policy);
  }
}
