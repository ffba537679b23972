import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where cgroup v1 mounts its cpu controller (on these machines apart from cpuacct). */
export const CPU_CGROUP_ROOT = '/sys/fs/cgroup/cpu';

/** The CFS period the caps use: the kernel's default, 100 ms. */
export const CFS_PERIOD_US = 100_000;

/** The kernel refuses a quota under 1 ms per period. */
const MIN_QUOTA_US = 1_000;

/** A group's last process may take a moment to leave after it exited; rmdir is tried this often. */
const REMOVE_ATTEMPTS = 40;
const REMOVE_RETRY_MS = 50;

/** Thrown when this machine cannot cap a process's CPU with a cgroup v1; the message says why. */
export class CpuCgroupUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'CpuCgroupUnavailableError';
  }
}

/**
 * `cpu.cfs_quota_us` for a cap of `cpus` (0.3: three tenths of one core) per `periodUs`: the CPU
 * time the group's processes may use per period, all their threads together. Refuses a cap the
 * kernel would refuse (under 1 ms per period) or that caps nothing (not a positive number).
 * @throws RangeError naming the cap.
 */
export function cfsQuotaUs(cpus: number, periodUs = CFS_PERIOD_US): number {
  if (!Number.isFinite(cpus) || cpus <= 0) throw new RangeError(`a CPU cap must be above 0, not ${cpus}`);
  const quotaUs = Math.round(cpus * periodUs);
  if (quotaUs < MIN_QUOTA_US) {
    throw new RangeError(`a cap of ${cpus} CPU is under the kernel's ${MIN_QUOTA_US} µs per ${periodUs} µs`);
  }
  return quotaUs;
}

/** What the CFS throttle did to a group so far (`cpu.stat`). */
export interface CpuThrottling {
  /** Periods in which the group had runnable work. */
  readonly periods: number;
  /** Of those, the periods in which it used up its quota and waited. */
  readonly throttledPeriods: number;
  /** How long its threads waited, in all, in ms. */
  readonly throttledMs: number;
}

/** Parse a cgroup v1 `cpu.stat`. */
export function parseCpuStat(text: string): CpuThrottling {
  const field = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return {
    periods: field('nr_periods'),
    throttledPeriods: field('nr_throttled'),
    throttledMs: field('throttled_time') / 1e6,
  };
}

/** A cgroup of the cpu controller whose processes share a cap of CPU; removed by its own handle. */
export interface CpuCgroup extends AsyncDisposable {
  readonly path: string;
  readonly cpus: number;
  /** Move a live process, every thread of it, into the group. */
  add(pid: number): void;
  /** The group's throttling so far. */
  throttling(): CpuThrottling;
  /** Remove the group, once its processes have exited (stop them first); idempotent. */
  remove(): Promise<void>;
}

/**
 * Make the cgroup `name` under {@link CPU_CGROUP_ROOT}, capped at `cpus` CPU. Needs cgroup v1's
 * cpu controller and the right to make groups in it (root).
 * @throws CpuCgroupUnavailableError saying what is missing.
 */
export function createCpuCgroup(name: string, cpus: number): CpuCgroup {
  const quotaUs = cfsQuotaUs(cpus);
  if (!existsSync(join(CPU_CGROUP_ROOT, 'cpu.cfs_quota_us'))) {
    throw new CpuCgroupUnavailableError(
      `no cgroup v1 cpu controller at ${CPU_CGROUP_ROOT} (cpu.cfs_quota_us is missing; a cgroup v2-only machine?)`,
    );
  }
  const path = join(CPU_CGROUP_ROOT, name);
  try {
    mkdirSync(path);
  } catch (error) {
    throw new CpuCgroupUnavailableError(
      `cannot make the cgroup ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)}; it needs root)`,
      { cause: error },
    );
  }
  let removed: Promise<void> | undefined;
  const remove = () => {
    removed ??= removeWhenEmpty(path);
    return removed;
  };
  try {
    writeFileSync(join(path, 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
    writeFileSync(join(path, 'cpu.cfs_quota_us'), String(quotaUs));
  } catch (error) {
    rmdirSync(path);
    throw new CpuCgroupUnavailableError(`cannot cap the cgroup ${path}: ${String(error)}`, { cause: error });
  }
  return {
    path,
    cpus,
    add: (pid) => writeFileSync(join(path, 'cgroup.procs'), String(pid)),
    throttling: () => parseCpuStat(readFileSync(join(path, 'cpu.stat'), 'utf8')),
    remove,
    [Symbol.asyncDispose]: remove,
  };
}

/** rmdir `path`, retrying while it is busy (a process that exited may not have left it yet). */
async function removeWhenEmpty(path: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      rmdirSync(path);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY' || attempt >= REMOVE_ATTEMPTS) throw error;
      await sleep(REMOVE_RETRY_MS);
    }
  }
}
