/**
 * What `pnpm bench:profile` prints about a profile: where the samples went, by function, and how
 * long the event loop was held at a time. Pure functions over V8's profile formats (the
 * `.cpuprofile` and `.heapprofile` JSON that DevTools opens too), so `tests/repo` can check them.
 */

/** A V8 CPU profile (`Profiler.stop`), as far as the summary reads it. */
export interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: CallFrame;
    readonly children?: readonly number[];
  }[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  /** µs between samples, the first from `startTime`. */
  readonly timeDeltas: readonly number[];
}

/** A V8 sampling heap profile (`HeapProfiler.stopSampling`), as far as the summary reads it. */
export interface HeapProfile {
  readonly head: HeapNode;
}

interface HeapNode {
  readonly callFrame: CallFrame;
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

/** A function (name, file and line) and its share of the samples or bytes. */
export interface FunctionShare {
  readonly name: string;
  readonly share: number;
}

export interface CpuProfileSummary {
  readonly spanMs: number;
  readonly samples: number;
  /** Samples with the loop waiting for I/O. */
  readonly idleShare: number;
  readonly gcShare: number;
  /** Where the samples were taken, by the function running. */
  readonly self: readonly FunctionShare[];
  /** Where the samples were taken, by every function on the stack. */
  readonly inclusive: readonly FunctionShare[];
  /**
   * Runs of consecutive busy samples: how often the loop was held at least that long. A run
   * spans from its first sample to its last, plus one interval; a process the OS descheduled
   * mid-run shows as a longer run with few samples.
   */
  readonly busyRuns: readonly { readonly atLeastMs: number; readonly count: number }[];
  readonly longestBusyMs: number;
}

export interface HeapProfileSummary {
  readonly sampledBytes: number;
  /** Where the sampled bytes were allocated, by the function allocating. */
  readonly self: readonly FunctionShare[];
}

/** The thresholds of {@link CpuProfileSummary.busyRuns}, in ms. */
export const BUSY_RUN_THRESHOLDS_MS = [1, 2, 5, 10, 20] as const;

const IDLE = '(idle)';
const GC = '(garbage collector)';
/** Frames that stand for no code of anyone's. */
const UNATTRIBUTED = new Set(['(root)', '(program)']);

/** `name path:line`, the path from the package directory on (node_modules or the repository's). */
export function frameName(frame: CallFrame): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  if (frame.url === '') return name;
  const path = frame.url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\/(?!\.pnpm)/, '')
    .replace(/^.*\/(apps|packages|bench)\//, '$1/');
  return `${name} ${path}:${frame.lineNumber + 1}`;
}

export function summarizeCpuProfile(profile: CpuProfile, top = 25): CpuProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let idle = 0;
  let gc = 0;
  const runs: number[] = [];
  let runStartUs: number | undefined;
  let lastBusyUs = 0;
  let timeUs = profile.startTime;
  const intervalUs =
    profile.samples.length > 0 ? (profile.endTime - profile.startTime) / profile.samples.length : 0;
  for (let i = 0; i < profile.samples.length; i++) {
    timeUs += profile.timeDeltas[i] ?? 0;
    const id = profile.samples[i] as number;
    const leaf = byId.get(id);
    const leafName = leaf ? frameName(leaf.callFrame) : '?';
    if (leafName === IDLE) {
      idle++;
      if (runStartUs !== undefined) runs.push((lastBusyUs - runStartUs + intervalUs) / 1_000);
      runStartUs = undefined;
      continue;
    }
    if (leafName === GC) gc++;
    runStartUs ??= timeUs;
    lastBusyUs = timeUs;
    if (!UNATTRIBUTED.has(leafName)) add(self, leafName);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const node = byId.get(at);
      const name = node ? frameName(node.callFrame) : '?';
      if (UNATTRIBUTED.has(name) || seen.has(name)) continue;
      seen.add(name);
      add(inclusive, name);
    }
  }
  if (runStartUs !== undefined) runs.push((lastBusyUs - runStartUs + intervalUs) / 1_000);
  const samples = profile.samples.length;
  return {
    spanMs: (profile.endTime - profile.startTime) / 1_000,
    samples,
    idleShare: samples === 0 ? 0 : idle / samples,
    gcShare: samples === 0 ? 0 : gc / samples,
    self: topShares(self, samples, top),
    inclusive: topShares(inclusive, samples, top),
    busyRuns: BUSY_RUN_THRESHOLDS_MS.map((atLeastMs) => ({
      atLeastMs,
      count: runs.filter((ms) => ms >= atLeastMs).length,
    })),
    longestBusyMs: runs.length === 0 ? 0 : Math.max(...runs),
  };
}

export function summarizeHeapProfile(profile: HeapProfile, top = 25): HeapProfileSummary {
  const self = new Map<string, number>();
  let sampledBytes = 0;
  const pending: HeapNode[] = [profile.head];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    sampledBytes += node.selfSize;
    if (node.selfSize > 0) add(self, frameName(node.callFrame), node.selfSize);
    pending.push(...node.children);
  }
  return { sampledBytes, self: topShares(self, sampledBytes, top) };
}

function add(totals: Map<string, number>, name: string, amount = 1): void {
  totals.set(name, (totals.get(name) ?? 0) + amount);
}

function topShares(totals: ReadonlyMap<string, number>, whole: number, top: number): FunctionShare[] {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, amount]) => ({ name, share: whole === 0 ? 0 : amount / whole }));
}
