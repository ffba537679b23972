import { readdirSync, readFileSync } from 'node:fs';

/** Linux counts process CPU time in USER_HZ ticks: 100 a second on every architecture Node runs on. */
const MS_PER_TICK = 10;

/** The fields of one `/proc/<pid>/stat` line that CPU accounting needs, in ms. */
export interface ProcStat {
  readonly ppid: number;
  /** User + system time of the process itself (all its threads). */
  readonly ownMs: number;
  /** User + system time of its children that exited and that it waited for. */
  readonly reapedChildrenMs: number;
}

/**
 * Parse a `/proc/<pid>/stat` line; `undefined` if it is not one. The command name is in parentheses
 * and may hold spaces and parentheses itself, so the fields are counted from the last `) `.
 */
export function parseProcStat(line: string): ProcStat | undefined {
  const end = line.lastIndexOf(') ');
  if (end < 0) return undefined;
  // From the state (field 3): ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
  const fields = line.slice(end + 2).split(' ');
  const at = (field: number) => Number(fields[field - 3]);
  const [ppid, utime, stime, cutime, cstime] = [at(4), at(14), at(15), at(16), at(17)];
  if (![ppid, utime, stime, cutime, cstime].every(Number.isFinite)) return undefined;
  return { ppid, ownMs: (utime + stime) * MS_PER_TICK, reapedChildrenMs: (cutime + cstime) * MS_PER_TICK };
}

function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    // The process exited between listing /proc and reading it.
    return undefined;
  }
}

/**
 * CPU time a live process has used, user + system, in ms (Linux /proc/<pid>/stat, in USER_HZ
 * ticks of 10 ms). On a machine shared with other work this is what a start-up costs, where the
 * wall time also counts the waits for a core.
 */
export function cpuTimeOf(pid: number): number {
  return readProcStat(pid)?.ownMs ?? Number.NaN;
}

/**
 * CPU time of a process and every process below it, in ms: each live one's own time, plus what
 * the exited ones used (counted in their parent's reaped-children time once it waited for them).
 * For a server that forks a process per connection (PostgreSQL's backends): the difference of two
 * readings is what the whole server used between them, whichever backends came and went.
 */
export function processTreeCpuTimeOf(rootPid: number): number {
  const stats = new Map<number, ProcStat>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const stat = readProcStat(pid);
    if (stat !== undefined) stats.set(pid, stat);
  }
  return treeCpuTime(rootPid, stats);
}

/** {@link processTreeCpuTimeOf} over a snapshot of `/proc`: pure, for tests. */
export function treeCpuTime(rootPid: number, stats: ReadonlyMap<number, ProcStat>): number {
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of stats) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  let total = 0;
  // Breadth first over a snapshot: each pid is seen once, so the walk ends even if /proc changed.
  const seen = new Set<number>();
  const queue = stats.has(rootPid) ? [rootPid] : [];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    if (seen.has(pid)) continue;
    seen.add(pid);
    const stat = stats.get(pid);
    if (stat === undefined) continue;
    total += stat.ownMs + stat.reapedChildrenMs;
    queue.push(...(children.get(pid) ?? []));
  }
  return stats.has(rootPid) ? total : Number.NaN;
}
