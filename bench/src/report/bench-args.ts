import { checkStoreChoice, defaultStoreChoice, readStoreFlag, type StoreChoice } from './store-flags.js';

/** The workloads `pnpm bench` knows, in the order it runs them. */
export const WORKLOADS = ['w1', 'w2s', 'w2', 'w2c10', 'w3', 'w4', 'x5', 'pending', 'takeover'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

export interface BenchArgs extends Readonly<StoreChoice> {
  /** The workloads to run: those named on the command line, or all of them. */
  readonly workloads: readonly WorkloadName[];
  /** Also run NATS JetStream and RabbitMQ quorum queues (`--peers`). */
  readonly peers: boolean;
  /** How many times each workload runs; the table shows the median of each figure (`--runs N`). */
  readonly runs: number;
}

const MAX_RUNS = 20;

/** Thrown on a command line `pnpm bench` cannot run; the message says what was wrong. */
export class BenchArgsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BenchArgsError';
  }
}

/**
 * `pnpm bench [--peers] [--runs N] [--store lmdb|postgres] [--store-queues N] [--store-spread N] [w1 w2s w2 w2c10 w3 w4 x5 pending takeover]`.
 * Names are case-insensitive; `--runs` takes 1–20 (also as `--runs=N`), `--store` also as `--store=…`,
 * `--store-queues` 1–64 with `--store postgres`, `--store-spread` 2–8 brokers with `--store-queues` 2 or more. An
 * unknown word is an error rather than a silently empty run.
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const named = new Set<WorkloadName>();
  let peers = false;
  let runs = 1;
  const choice = defaultStoreChoice();
  const fail = (message: string) => new BenchArgsError(message);
  for (let i = 0; i < argv.length; i++) {
    const arg = (argv[i] ?? '').toLowerCase();
    const storeFlagEnd = readStoreFlag(argv, i, choice, fail);
    if (storeFlagEnd !== undefined) {
      i = storeFlagEnd;
    } else if (arg === '--peers') {
      peers = true;
    } else if (arg === '--runs' || arg.startsWith('--runs=')) {
      const value = arg === '--runs' ? argv[++i] : arg.slice('--runs='.length);
      runs = Number(value);
      if (!Number.isInteger(runs) || runs < 1 || runs > MAX_RUNS) {
        throw new BenchArgsError(
          `--runs takes a whole number from 1 to ${MAX_RUNS}, not ${value ?? 'nothing'}`,
        );
      }
    } else if ((WORKLOADS as readonly string[]).includes(arg)) {
      named.add(arg as WorkloadName);
    } else {
      throw new BenchArgsError(
        `unknown argument ${argv[i]}: expected --peers, --runs N, --store lmdb|postgres, --store-queues N, --store-spread N or workloads (${WORKLOADS.join(', ')})`,
      );
    }
  }
  const workloads = named.size === 0 ? [...WORKLOADS] : WORKLOADS.filter((name) => named.has(name));
  checkStoreChoice(choice, fail);
  return { workloads, peers, runs, ...choice };
}
