import type { BenchStore } from '../bench-store.js';

/** The workloads `pnpm bench` knows, in the order it runs them. */
export const WORKLOADS = ['w1', 'w2s', 'w2', 'w2c10', 'w3', 'w4', 'pending', 'takeover'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

export interface BenchArgs {
  /** The workloads to run: those named on the command line, or all of them. */
  readonly workloads: readonly WorkloadName[];
  /** Also run NATS JetStream and RabbitMQ quorum queues (`--peers`). */
  readonly peers: boolean;
  /** How many times each workload runs; the table shows the median of each figure (`--runs N`). */
  readonly runs: number;
  /** Where ricochet's brokers keep their state (`--store lmdb|postgres`). @default 'lmdb' */
  readonly store: BenchStore;
  /** How many queues a PostgreSQL store is split into (`--store-queues N`, with `--store postgres`). @default 1 */
  readonly storeQueues: number;
  /**
   * Over how many brokers the queues are spread (`--store-spread N`, with `--store postgres` and
   * `--store-queues` 2 or more): the clients use the first, which forwards to the others. @default 1
   */
  readonly spreadBrokers: number;
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
 * `pnpm bench [--peers] [--runs N] [--store lmdb|postgres] [--store-queues N] [--store-spread N] [w1 w2s w2 w2c10 w3 w4 pending takeover]`.
 * Names are case-insensitive; `--runs` takes 1–20 (also as `--runs=N`), `--store` also as `--store=…`,
 * `--store-queues` 1–64 with `--store postgres`, `--store-spread` 2–8 brokers with `--store-queues` 2 or more. An
 * unknown word is an error rather than a silently empty run.
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const named = new Set<WorkloadName>();
  let peers = false;
  let runs = 1;
  let store: BenchStore = 'lmdb';
  let storeQueues = 1;
  let spreadBrokers = 1;
  for (let i = 0; i < argv.length; i++) {
    const arg = (argv[i] ?? '').toLowerCase();
    if (arg === '--peers') {
      peers = true;
    } else if (arg === '--runs' || arg.startsWith('--runs=')) {
      const value = arg === '--runs' ? argv[++i] : arg.slice('--runs='.length);
      runs = Number(value);
      if (!Number.isInteger(runs) || runs < 1 || runs > MAX_RUNS) {
        throw new BenchArgsError(
          `--runs takes a whole number from 1 to ${MAX_RUNS}, not ${value ?? 'nothing'}`,
        );
      }
    } else if (arg === '--store' || arg.startsWith('--store=')) {
      const value = arg === '--store' ? argv[++i]?.toLowerCase() : arg.slice('--store='.length);
      if (value !== 'lmdb' && value !== 'postgres') {
        throw new BenchArgsError(`--store takes lmdb or postgres, not ${value ?? 'nothing'}`);
      }
      store = value;
    } else if (arg === '--store-queues' || arg.startsWith('--store-queues=')) {
      const value = arg === '--store-queues' ? argv[++i] : arg.slice('--store-queues='.length);
      storeQueues = Number(value);
      if (!Number.isInteger(storeQueues) || storeQueues < 1 || storeQueues > 64) {
        throw new BenchArgsError(
          `--store-queues takes a whole number from 1 to 64, not ${value ?? 'nothing'}`,
        );
      }
    } else if (arg === '--store-spread' || arg.startsWith('--store-spread=')) {
      const value = arg === '--store-spread' ? argv[++i] : arg.slice('--store-spread='.length);
      spreadBrokers = Number(value);
      if (!Number.isInteger(spreadBrokers) || spreadBrokers < 2 || spreadBrokers > 8) {
        throw new BenchArgsError(
          `--store-spread takes a number of brokers from 2 to 8, not ${value ?? 'nothing'}`,
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
  if (storeQueues > 1 && store !== 'postgres') {
    throw new BenchArgsError('--store-queues splits a PostgreSQL store: add --store postgres');
  }
  if (spreadBrokers > 1 && storeQueues < 2) {
    throw new BenchArgsError(
      '--store-spread spreads the queues of a split store: add --store-queues N (2 or more)',
    );
  }
  return { workloads, peers, runs, store, storeQueues, spreadBrokers };
}
