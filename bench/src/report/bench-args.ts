import { DEFAULT_TENANTS } from '../workloads/many-tenants.js';
import { checkStoreChoice, defaultStoreChoice, readStoreFlag, type StoreChoice } from './store-flags.js';

/** The workloads `pnpm bench` knows, in the order it runs them. */
export const WORKLOADS = [
  'w1',
  'w2s',
  'w2',
  'w2c10',
  'w3',
  'w4',
  'x5',
  'pending',
  'many-tenants',
  'takeover',
] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

export interface BenchArgs extends Readonly<StoreChoice> {
  /** The workloads to run: those named on the command line, or all of them. */
  readonly workloads: readonly WorkloadName[];
  /** Also run NATS JetStream and RabbitMQ quorum queues (`--peers`). */
  readonly peers: boolean;
  /** How many times each workload runs; the table shows the median of each figure (`--runs N`). */
  readonly runs: number;
  /** How many topics and groups `many-tenants` creates (`--tenants N`). @default 100,000 */
  readonly tenants: number;
}

const MAX_RUNS = 20;
/** `--tenants` above this would take hours to create and GBs to hold: a typo, not a bench. */
const MAX_TENANTS = 1_000_000;

/** Thrown on a command line `pnpm bench` cannot run; the message says what was wrong. */
export class BenchArgsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BenchArgsError';
  }
}

/**
 * `pnpm bench [--peers] [--runs N] [--tenants N] [--store lmdb|postgres] [--store-queues N] [--store-spread N] [w1 w2s w2 w2c10 w3 w4 x5 pending many-tenants takeover]`.
 * Names are case-insensitive; `--runs` takes 1–20 (also as `--runs=N`), `--tenants` 1–1,000,000 (also as
 * `--tenants=N`), `--store` also as `--store=…`,
 * `--store-queues` 1–64 with `--store postgres`, `--store-spread` 2–8 brokers with `--store-queues` 2 or more. An
 * unknown word is an error rather than a silently empty run.
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const named = new Set<WorkloadName>();
  let peers = false;
  let runs = 1;
  let tenants = DEFAULT_TENANTS;
  const choice = defaultStoreChoice();
  const fail = (message: string) => new BenchArgsError(message);
  for (let i = 0; i < argv.length; i++) {
    const arg = (argv[i] ?? '').toLowerCase();
    const storeFlagEnd = readStoreFlag(argv, i, choice, fail);
    if (storeFlagEnd !== undefined) {
      i = storeFlagEnd;
    } else if (arg === '--peers') {
      peers = true;
    } else if (isFlag(arg, '--runs')) {
      [runs, i] = readWholeNumber(argv, i, '--runs', 1, MAX_RUNS);
    } else if (isFlag(arg, '--tenants')) {
      [tenants, i] = readWholeNumber(argv, i, '--tenants', 1, MAX_TENANTS);
    } else if ((WORKLOADS as readonly string[]).includes(arg)) {
      named.add(arg as WorkloadName);
    } else {
      throw new BenchArgsError(
        `unknown argument ${argv[i]}: expected --peers, --runs N, --tenants N, --store lmdb|postgres, --store-queues N, --store-spread N or workloads (${WORKLOADS.join(', ')})`,
      );
    }
  }
  const workloads = named.size === 0 ? [...WORKLOADS] : WORKLOADS.filter((name) => named.has(name));
  checkStoreChoice(choice, fail);
  return { workloads, peers, runs, tenants, ...choice };
}

const isFlag = (arg: string, flag: string) => arg === flag || arg.startsWith(`${flag}=`);

/**
 * The whole number from `min` to `max` that `argv[i]` (`--flag N` or `--flag=N`) gives, and the
 * index of the flag's last word. @throws BenchArgsError naming the flag and what it was given.
 */
function readWholeNumber(
  argv: readonly string[],
  i: number,
  flag: string,
  min: number,
  max: number,
): [value: number, last: number] {
  const inline = argv[i]?.includes('=') ?? false;
  const text = inline ? argv[i]?.slice(flag.length + 1) : argv[i + 1];
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new BenchArgsError(
      `${flag} takes a whole number from ${min} to ${max.toLocaleString('en')}, not ${text ?? 'nothing'}`,
    );
  }
  return [value, inline ? i : i + 1];
}
