import {
  checkStoreChoice,
  defaultStoreChoice,
  readStoreFlag,
  type StoreChoice,
} from '../report/store-flags.js';

/** The workloads `pnpm bench:profile` can profile, one per run. */
export const PROFILED_WORKLOADS = [
  'w1',
  'w2',
  'w2c10',
  'w2s',
  'w3',
  'w4',
  'w1-grpc',
  'w2s-grpc',
  'w1-grpc-raw',
  'w2s-grpc-raw',
  'idle',
] as const;
export type ProfiledWorkload = (typeof PROFILED_WORKLOADS)[number];

export interface ProfileArgs extends Readonly<StoreChoice> {
  readonly workload: ProfiledWorkload;
  /** V8's sampling heap profiler instead of the CPU profiler (`--heap`). */
  readonly heap: boolean;
  /** Functions listed per table (`--top N`). */
  readonly top: number;
}

/** Thrown on a command line `pnpm bench:profile` cannot run; the message says what was wrong. */
export class ProfileArgsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProfileArgsError';
  }
}

const MAX_TOP = 200;

/**
 * `pnpm bench:profile <w1|w2|w2c10|w2s|w3|w4|w1-grpc|w2s-grpc|w1-grpc-raw|w2s-grpc-raw|idle> [--heap] [--top N] [--store lmdb|postgres]
 * [--store-queues N] [--store-spread N]`, case-insensitive. With `--store-spread`, every broker of
 * the spread cluster is profiled.
 */
export function parseProfileArgs(argv: readonly string[]): ProfileArgs {
  let workload: ProfiledWorkload | undefined;
  let heap = false;
  let top = 25;
  const choice = defaultStoreChoice();
  const fail = (message: string) => new ProfileArgsError(message);
  for (let i = 0; i < argv.length; i++) {
    const arg = (argv[i] ?? '').toLowerCase();
    const storeFlagEnd = readStoreFlag(argv, i, choice, fail);
    if (storeFlagEnd !== undefined) {
      i = storeFlagEnd;
    } else if (arg === '--heap') {
      heap = true;
    } else if (arg === '--top' || arg.startsWith('--top=')) {
      const value = arg === '--top' ? argv[++i] : arg.slice('--top='.length);
      top = Number(value);
      if (!Number.isInteger(top) || top < 1 || top > MAX_TOP) {
        throw new ProfileArgsError(
          `--top takes a whole number from 1 to ${MAX_TOP}, not ${value ?? 'nothing'}`,
        );
      }
    } else if ((PROFILED_WORKLOADS as readonly string[]).includes(arg)) {
      if (workload !== undefined) throw new ProfileArgsError('name one workload per run');
      workload = arg as ProfiledWorkload;
    } else {
      throw new ProfileArgsError(
        `unknown argument ${argv[i]}: expected a workload (${PROFILED_WORKLOADS.join(', ')}), --heap, --top N, --store lmdb|postgres, --store-queues N or --store-spread N`,
      );
    }
  }
  if (workload === undefined) {
    throw new ProfileArgsError(`name the workload to profile: ${PROFILED_WORKLOADS.join(', ')}`);
  }
  checkStoreChoice(choice, fail);
  return { workload, heap, top, ...choice };
}
