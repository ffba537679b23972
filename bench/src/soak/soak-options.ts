/** How long and how hard `pnpm soak` runs. */
export interface SoakOptions {
  /** Seconds of load with kills; then sending stops and the groups drain. */
  readonly durationS: number;
  /** Stop killing after this many kills, even with time left. */
  readonly maxKills: number;
  /** The broker's mean life between kills, in ms; each life is drawn from ±50 % of it. */
  readonly meanLifeMs: number;
}

export const SOAK_USAGE =
  'usage: pnpm soak [--duration <s>] [--kills <n>] [--life <ms>]   (defaults: 60 s, no cap on kills, 2500 ms)';

/** Parse `--duration`, `--kills` and `--life`; throws with {@link SOAK_USAGE} on anything else. */
export function parseSoakOptions(args: readonly string[]): SoakOptions {
  const options = { durationS: 60, maxKills: Number.POSITIVE_INFINITY, meanLifeMs: 2_500 };
  for (let i = 0; i < args.length; i += 2) {
    const value = Number(args[i + 1]);
    if (!Number.isFinite(value) || value <= 0)
      throw new Error(`${args[i]} needs a positive number\n${SOAK_USAGE}`);
    if (args[i] === '--duration') options.durationS = value;
    else if (args[i] === '--kills') options.maxKills = Math.floor(value);
    else if (args[i] === '--life') options.meanLifeMs = value;
    else throw new Error(`unknown option ${args[i]}\n${SOAK_USAGE}`);
  }
  return options;
}
