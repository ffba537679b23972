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

/**
 * Workloads a run without names leaves out: `many-tenants` creates a hundred thousand topics and
 * groups over the admin API, a quarter of an hour of its own, which would triple a full run.
 */
const ONLY_BY_NAME: ReadonlySet<WorkloadName> = new Set(['many-tenants']);

export interface BenchArgs extends Readonly<StoreChoice> {
  /** The workloads to run: those named on the command line, or all of them. */
  readonly workloads: readonly WorkloadName[];
  /** Also run NATS JetStream and RabbitMQ quorum queues (`--peers`). */
  readonly peers: boolean;
  /** How many times each workload runs; the table shows the median of each figure (`--runs N`). */
  readonly runs: number;
  /** `--scaling`: W1 and W2 on 1, 2 and 3 CPU-capped brokers instead of the side-by-side table. */
  readonly scaling: ScalingChoice | undefined;
  /** How many topics and groups `many-tenants` creates (`--tenants N`). @default 100,000 */
  readonly tenants: number;
}

/** How `pnpm bench --scaling` caps its brokers. */
export interface ScalingChoice {
  /** Each broker's cgroup's cap, in CPUs (`--cpu-cap N`). @default 0.3 */
  readonly cpuCap: number;
}

const DEFAULT_CPU_CAP = 0.3;
/** With `--scaling`: 6 queues spread evenly over 1, 2 and 3 brokers (4 leave one of three with two). */
const DEFAULT_SCALING_QUEUES = 6;
/** With `--scaling`, at least one queue per broker of the largest count. */
const MIN_SCALING_QUEUES = 3;
/** A cap of a hundredth of a CPU is the kernel's least (1 ms per 100 ms period). */
const MIN_CPU_CAP = 0.01;
const MAX_CPU_CAP = 64;

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
 * `pnpm bench [--peers] [--runs N] [--tenants N] [--store lmdb|postgres] [--store-queues N] [--store-spread N] [w1 w2s w2 w2c10 w3 w4 x5 pending many-tenants takeover]`,
 * or `pnpm bench --scaling [--cpu-cap N] [--runs N] [--store-queues N]` (`--cpu-cap` 0.01–64 CPUs).
 * Without workload names it runs every workload but `many-tenants`, which is run by name (its
 * hundred thousand tenants take a quarter of an hour to create). Names are case-insensitive;
 * `--runs` takes 1–20 (also as `--runs=N`), `--tenants` 1–1,000,000 (also as `--tenants=N`), `--store` also as `--store=…`,
 * `--store-queues` 1–64 with `--store postgres`, `--store-spread` 2–8 brokers with `--store-queues` 2 or more. An
 * unknown word is an error rather than a silently empty run.
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const named = new Set<WorkloadName>();
  let peers = false;
  let runs = 1;
  let scaling = false;
  let cpuCap: number | undefined;
  /** The store flags given, by name: `--scaling` chooses its own defaults for the others. */
  const storeFlagsGiven = new Set<string>();
  let tenants = DEFAULT_TENANTS;
  const choice = defaultStoreChoice();
  const fail = (message: string) => new BenchArgsError(message);
  for (let i = 0; i < argv.length; i++) {
    const arg = (argv[i] ?? '').toLowerCase();
    const storeFlagEnd = readStoreFlag(argv, i, choice, fail);
    if (storeFlagEnd !== undefined) {
      storeFlagsGiven.add(arg.split('=')[0] ?? arg);
      i = storeFlagEnd;
    } else if (arg === '--scaling') {
      scaling = true;
    } else if (arg === '--cpu-cap' || arg.startsWith('--cpu-cap=')) {
      const value = arg === '--cpu-cap' ? argv[++i] : arg.slice('--cpu-cap='.length);
      cpuCap = Number(value);
      if (!Number.isFinite(cpuCap) || cpuCap < MIN_CPU_CAP || cpuCap > MAX_CPU_CAP) {
        throw new BenchArgsError(
          `--cpu-cap takes a number of CPUs from ${MIN_CPU_CAP} to ${MAX_CPU_CAP}, not ${value ?? 'nothing'}`,
        );
      }
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
        `unknown argument ${argv[i]}: expected --peers, --runs N, --tenants N, --store lmdb|postgres, --store-queues N, --store-spread N, --scaling [--cpu-cap N] or workloads (${WORKLOADS.join(', ')})`,
      );
    }
  }
  if (scaling) return scalingArgs({ named, peers, runs, choice, storeFlagsGiven, cpuCap });
  if (cpuCap !== undefined)
    throw new BenchArgsError('--cpu-cap caps the brokers of --scaling: add --scaling');
  const workloads =
    named.size === 0
      ? WORKLOADS.filter((name) => !ONLY_BY_NAME.has(name))
      : WORKLOADS.filter((name) => named.has(name));
  checkStoreChoice(choice, fail);
  return { workloads, peers, runs, tenants, ...choice, scaling: undefined };
}

/**
 * `--scaling`'s own rules: W1 and W2 only, on PostgreSQL, the broker counts its own (no
 * `--store-spread`), 3 or more queues (6 unless `--store-queues` says).
 */
function scalingArgs({
  named,
  peers,
  runs,
  choice,
  storeFlagsGiven,
  cpuCap = DEFAULT_CPU_CAP,
}: {
  named: ReadonlySet<WorkloadName>;
  peers: boolean;
  runs: number;
  choice: StoreChoice;
  storeFlagsGiven: ReadonlySet<string>;
  cpuCap: number | undefined;
}): BenchArgs {
  if (named.size > 0 || peers) {
    throw new BenchArgsError('--scaling runs W1 and W2 on Ricochet alone: drop the workloads and --peers');
  }
  if (storeFlagsGiven.has('--store') && choice.store !== 'postgres') {
    throw new BenchArgsError('--scaling runs its brokers on PostgreSQL: drop --store lmdb');
  }
  if (storeFlagsGiven.has('--store-spread')) {
    throw new BenchArgsError('--scaling chooses the broker counts itself (1, 2 and 3): drop --store-spread');
  }
  const storeQueues = storeFlagsGiven.has('--store-queues') ? choice.storeQueues : DEFAULT_SCALING_QUEUES;
  if (storeQueues < MIN_SCALING_QUEUES) {
    throw new BenchArgsError(
      `--scaling needs --store-queues ${MIN_SCALING_QUEUES} or more, a queue for each of 3 brokers`,
    );
  }
  return {
    workloads: ['w1', 'w2'],
    peers: false,
    runs,
    tenants: DEFAULT_TENANTS,
    store: 'postgres',
    storeQueues,
    spreadBrokers: 1,
    scaling: { cpuCap },
  };
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
