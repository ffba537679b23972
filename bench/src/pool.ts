/**
 * Run `task(i)` for i in [0, count) with at most `inFlight` running at once, each awaited: the
 * client pattern of every throughput workload ("up to N in flight, each awaited").
 */
export async function runPool(
  count: number,
  inFlight: number,
  task: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(inFlight, count) }, async () => {
    while (next < count) {
      const index = next++;
      await task(index);
    }
  });
  await Promise.all(workers);
}

/** Messages per second over a measured span. */
export function rate(messages: number, startedAt: number): number {
  return messages / ((performance.now() - startedAt) / 1_000);
}

/** The p-th percentile (0–100) of numbers, by nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** A count to `target`: `tick()` once per event; `done` resolves at the `target`-th tick. */
export function countdown(target: number): { tick: () => void; done: Promise<void> } {
  let seen = 0;
  let resolve: () => void = () => {};
  const done = new Promise<void>((r) => (resolve = r));
  return {
    tick: () => {
      seen++;
      if (seen === target) resolve();
    },
    done,
  };
}
