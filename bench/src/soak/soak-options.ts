/** How long and how hard `pnpm soak` runs. */
export interface SoakOptions {
  /** Seconds of load with kills; then sending stops and the groups drain. */
  readonly durationS: number;
  /** Stop killing after this many kills, even with time left. */
  readonly maxKills: number;
  /** The broker's mean life between kills, in ms; each life is drawn from ±50 % of it. */
  readonly meanLifeMs: number;
  /**
   * `lmdb`: one broker, restarted on its data directory after each kill. `postgres`: three brokers
   * on one PostgreSQL database, the owner killed and a standby taking over.
   */
  readonly store: 'lmdb' | 'postgres';
  /** With `postgres`: how many queues the brokers split the database into (`--store-queues`). */
  readonly storeQueues: number;
}

export const SOAK_USAGE =
  'usage: pnpm soak [--duration <s>] [--kills <n>] [--life <ms>] [--store lmdb|postgres] [--store-queues <n>]   (defaults: 60 s, no cap on kills, 2500 ms, lmdb, 1)';

/**
 * Parse `--duration`, `--kills`, `--life`, `--store` and `--store-queues` (1–64, with `--store
 * postgres`); throws with {@link SOAK_USAGE} on anything else.
 */
export function parseSoakOptions(args: readonly string[]): SoakOptions {
  const options: { -readonly [K in keyof SoakOptions]: SoakOptions[K] } = {
    durationS: 60,
    maxKills: Number.POSITIVE_INFINITY,
    meanLifeMs: 2_500,
    store: 'lmdb',
    storeQueues: 1,
  };
  for (let i = 0; i < args.length; i += 2) {
    if (args[i] === '--store') {
      const store = args[i + 1];
      if (store !== 'lmdb' && store !== 'postgres')
        throw new Error(`--store takes lmdb or postgres, not ${store ?? 'nothing'}\n${SOAK_USAGE}`);
      options.store = store;
      continue;
    }
    const value = Number(args[i + 1]);
    if (!Number.isFinite(value) || value <= 0)
      throw new Error(`${args[i]} needs a positive number\n${SOAK_USAGE}`);
    if (args[i] === '--duration') options.durationS = value;
    else if (args[i] === '--kills') options.maxKills = Math.floor(value);
    else if (args[i] === '--life') options.meanLifeMs = value;
    else if (args[i] === '--store-queues' && Number.isInteger(value) && value <= 64)
      options.storeQueues = value;
    else throw new Error(`unknown option ${args[i]}\n${SOAK_USAGE}`);
  }
  if (options.storeQueues > 1 && options.store !== 'postgres')
    throw new Error(`--store-queues splits a PostgreSQL store: add --store postgres\n${SOAK_USAGE}`);
  return options;
}
