import { readFileSync } from 'node:fs';

/**
 * What Linux's scheduler counted for one thread (`/proc/<pid>/task/<tid>/schedstat`, or
 * `/proc/<pid>/schedstat` for a process's main thread): the time it ran on a core, the time it
 * waited on a run queue, ready to run but without a core, and how many times it was put on one.
 */
export interface ThreadSchedule {
  readonly runMs: number;
  readonly waitMs: number;
  readonly slices: number;
}

/** Parse a schedstat line (`<run ns> <wait ns> <slices>`); `undefined` if it is not one. */
export function parseSchedstat(line: string): ThreadSchedule | undefined {
  const [run, wait, slices] = line.trim().split(/\s+/).map(Number);
  if (run === undefined || wait === undefined || slices === undefined) return undefined;
  if (![run, wait, slices].every(Number.isFinite)) return undefined;
  return { runMs: run / 1e6, waitMs: wait / 1e6, slices };
}

/** The main thread's schedule of a live process; `undefined` off Linux or once it has exited. */
export function mainThreadSchedule(pid: number): ThreadSchedule | undefined {
  try {
    return parseSchedstat(readFileSync(`/proc/${pid}/schedstat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** A main thread's share of a window, per second of it. */
export interface RunQueueShare {
  /** ms a second it ran. */
  readonly runMsPerS: number;
  /** ms a second it was ready to run and waited for a core. */
  readonly waitMsPerS: number;
  /** How long it waited each time it was put on a run queue, on average, in µs. */
  readonly waitUsPerSlice: number;
}

/** What two readings `elapsedMs` apart say of a thread (`undefined` if either is missing). */
export function shareBetween(
  before: ThreadSchedule | undefined,
  after: ThreadSchedule | undefined,
  elapsedMs: number,
): RunQueueShare | undefined {
  if (before === undefined || after === undefined || elapsedMs <= 0) return undefined;
  const seconds = elapsedMs / 1_000;
  const slices = after.slices - before.slices;
  const waitMs = after.waitMs - before.waitMs;
  return {
    runMsPerS: (after.runMs - before.runMs) / seconds,
    waitMsPerS: waitMs / seconds,
    waitUsPerSlice: slices > 0 ? (waitMs * 1_000) / slices : 0,
  };
}

/**
 * The run-queue wait of the server's and the client's main threads over a measured window: how
 * long each was ready to run and waited for a core. A latency workload's tail is made of such
 * waits as much as of the event loop's own stalls, which the loop's delay histogram cannot tell
 * apart from work: on a small machine the broker, its client and their helper threads (the
 * collector's, the compiler's, the store's writer) take turns on the same cores.
 */
export interface RunQueueReading {
  readonly server: RunQueueShare | undefined;
  readonly client: RunQueueShare | undefined;
}

/** A window over the main threads of `serverPid` and this process; {@link end} reads it. */
export function openRunQueueWindow(serverPid: number | undefined): { end(): RunQueueReading } {
  const startedAt = performance.now();
  const server = serverPid === undefined ? undefined : mainThreadSchedule(serverPid);
  const client = mainThreadSchedule(process.pid);
  return {
    end() {
      const elapsedMs = performance.now() - startedAt;
      return {
        server:
          serverPid === undefined
            ? undefined
            : shareBetween(server, mainThreadSchedule(serverPid), elapsedMs),
        client: shareBetween(client, mainThreadSchedule(process.pid), elapsedMs),
      };
    },
  };
}
