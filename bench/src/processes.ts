import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { spreadBrokers, spreadQueues, storeArgs } from './bench-store.js';
import { cpuTimeOf } from './cpu-time.js';
import { balancedDataDirs, waitUntilSpread } from './spread-cluster.js';

/** Resident memory of a process, in bytes: all of it, and its anonymous and file-backed parts. */
export interface ResidentMemory {
  readonly rssBytes: number;
  /** Heap and other private memory: what the process itself holds. */
  readonly anonBytes: number;
  /** Mapped file pages (for the broker, LMDB's memory map): page cache the kernel may reclaim. */
  readonly fileBytes: number;
}

/** A process the bench started; stopped by its own handle. */
export interface BenchProcess extends AsyncDisposable {
  readonly child: ChildProcess;
  /** What the process printed to announce itself (the URL or port line). */
  readonly banner: string;
  /** Its resident memory now (Linux /proc). */
  memory(): ResidentMemory;
  /**
   * Send `signal` and resolve with the first match of `pattern` in what the process prints after
   * it; rejects after `timeoutMs` or when the process exits first.
   */
  signalForOutput(signal: NodeJS.Signals, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  /** Resolve with the first match of `pattern` in what the process prints from now on; rejects as above. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  /** Whether anything it printed so far matches `pattern`. */
  hasPrinted(pattern: RegExp): boolean;
  /**
   * With `pnpm bench --store-spread N`, the other N - 1 brokers of the cluster, which this one
   * forwards to (and stops with it); absent otherwise.
   */
  readonly spreadPeers?: readonly BenchProcess[];
  stop(): Promise<void>;
}

/**
 * Resident memory of a live process from Linux /proc: `Rss` and `Anonymous` from smaps_rollup
 * (heap, stacks and other private memory), file-backed pages from status's `RssFile` (for the
 * broker, LMDB's memory map: page cache the kernel may reclaim).
 */
export function residentMemoryOf(pid: number): ResidentMemory {
  const kb = (text: string, field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return {
    rssBytes: kb(rollup, 'Rss'),
    anonBytes: kb(rollup, 'Anonymous'),
    fileBytes: kb(status, 'RssFile'),
  };
}

const require = createRequire(import.meta.url);
/**
 * The broker as it ships: its built `dist/main.js` (`pnpm bench` builds it first), so a
 * TypeScript loader's CPU and memory are not counted in the broker's figures.
 */
const BROKER_MAIN = join(dirname(require.resolve('@ricochet/broker/package.json')), 'dist', 'main.js');
const REFERENCE_MAIN = join(dirname(fileURLToPath(import.meta.url)), 'reference-server.ts');
const EVENT_LOOP_PROBE = join(dirname(fileURLToPath(import.meta.url)), 'event-loop-probe.mjs');
const PROFILE_PROBE = join(dirname(fileURLToPath(import.meta.url)), 'profile', 'profile-probe.mjs');
/** Preloaded into every process {@link start} starts: it ends once the bench that started it is gone. */
export const ORPHAN_GUARD = join(dirname(fileURLToPath(import.meta.url)), 'orphan-guard.mjs');

/** A profile of the broker over a window the caller opens and closes (see profile/profile-window.ts). */
export interface BrokerProfileOptions {
  /** The file the profile is written to. */
  readonly out: string;
  /** V8's CPU profiler, or its sampling heap profiler. */
  readonly kind: 'cpu' | 'heap';
}

async function start(
  script: string,
  args: string[],
  ready: RegExp,
  cleanup: () => void = () => {},
  nodeArgs: string[] = [],
  env: Readonly<Record<string, string>> = {},
): Promise<BenchProcess> {
  // TypeScript sources (the reference server) run through tsx; the built broker runs as plain JS.
  const loader = script.endsWith('.ts') ? ['--conditions=@ricochet/source', '--import', 'tsx'] : [];
  const guard = ['--import', pathToFileURL(ORPHAN_GUARD).href];
  const child = spawn(process.execPath, [...loader, ...guard, ...nodeArgs, script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: dirname(script),
    env: {
      ...process.env,
      RICOCHET_LOG_LEVEL: 'warn',
      RICOCHET_BENCH_PARENT_PID: String(process.pid),
      ...env,
    },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  const onOutput = new Set<() => void>();
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of onOutput) listener();
  });
  const banner = await new Promise<string>((resolve, reject) => {
    const listener = () => {
      const match = ready.exec(output);
      if (match) {
        onOutput.delete(listener);
        resolve(match[0]);
      }
    };
    onOutput.add(listener);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}: ${output}`)));
  });
  const waitForOutput = (pattern: RegExp, timeoutMs: number, signal?: NodeJS.Signals) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const since = output.length;
      const settle = (error?: Error, match?: RegExpExecArray) => {
        clearTimeout(timer);
        onOutput.delete(listener);
        child.off('exit', onExit);
        if (match) resolve(match);
        else reject(error);
      };
      const listener = () => {
        const match = pattern.exec(output.slice(since));
        if (match) settle(undefined, match);
      };
      const onExit = () => settle(new Error(`${script} exited before printing ${pattern}`));
      const timer = setTimeout(
        () => settle(new Error(`${script} printed no ${pattern} in ${timeoutMs} ms`)),
        timeoutMs,
      );
      onOutput.add(listener);
      child.once('exit', onExit);
      if (signal) child.kill(signal);
    });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    cleanup();
  };
  return {
    child,
    banner,
    memory: () => residentMemoryOf(child.pid ?? 0),
    signalForOutput: (signal, pattern, timeoutMs) => waitForOutput(pattern, timeoutMs, signal),
    waitForOutput: (pattern, timeoutMs) => waitForOutput(pattern, timeoutMs),
    hasPrinted: (pattern) => pattern.test(output),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** A transport the bench compares: the WebSocket endpoint or the TCP listener. */
export type BenchTransport = 'ws' | 'tcp';

/** The transports W1–W3 run over, side by side. */
export const BENCH_TRANSPORTS: readonly BenchTransport[] = ['ws', 'tcp'];

/**
 * The Ricochet broker, built, on a fresh data directory (and a fresh PostgreSQL database with
 * `pnpm bench --store postgres`, see bench-store.ts), with the default `fsync` flush policy,
 * serving WebSocket (`endpoint`, which the admin API shares) and TCP (`--tcp-port 0`).
 * `eventLoopProbe` preloads event-loop-probe.mjs into it: see {@link brokerEventLoopDelay};
 * `profile` preloads profile/profile-probe.mjs, for `pnpm bench:profile`.
 */
export async function startBrokerProcess(
  extraArgs: string[] = [],
  {
    eventLoopProbe = false,
    profile,
  }: { eventLoopProbe?: boolean; profile?: BrokerProfileOptions | undefined } = {},
): Promise<
  BenchProcess & {
    readonly endpoint: string;
    endpointFor(transport: BenchTransport): string;
    /** The RocketMQ access point, `127.0.0.1:<port>`, when `extraArgs` name `--grpc-port`. */
    readonly grpcEndpoint: string;
  }
> {
  const storeFlags = extraArgs.includes('--store') ? [] : await storeArgs();
  const spread = storeFlags.includes('--store-spread');
  // Spread, every broker's directory is chosen with the others, for a fair split of the queues.
  const [dataDir = '', ...peerDirs] = spread
    ? balancedDataDirs('ricochet-bench-', spreadBrokers(), spreadQueues())
    : [mkdtempSync(join(tmpdir(), 'ricochet-bench-'))];
  const process_ = await start(
    BROKER_MAIN,
    [
      '--port',
      '0',
      '--tcp-port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      dataDir,
      ...storeFlags,
      ...extraArgs,
    ],
    // "listening on", not "standing by on …": on PostgreSQL a broker relays as a standby until it
    // holds the store's lease, even on a fresh database.
    /(?<=listening on )ws:\/\/127\.0\.0\.1:\d+, tcp:\/\/127\.0\.0\.1:\d+(?:, grpc:\/\/127\.0\.0\.1:\d+)?(?= \()/,
    () => rmSync(dataDir, { recursive: true, force: true }),
    [
      ...(eventLoopProbe ? ['--import', pathToFileURL(EVENT_LOOP_PROBE).href] : []),
      ...(profile ? ['--import', pathToFileURL(PROFILE_PROBE).href] : []),
    ],
    profile ? { RICOCHET_PROFILE_OUT: profile.out, RICOCHET_PROFILE_KIND: profile.kind } : {},
  );
  const [endpoint = '', tcpEndpoint = '', grpcUrl = ''] = process_.banner.split(', ');
  // `pnpm bench --store-spread N`: N - 1 more brokers on the store, owning their share of its
  // queues; the clients still use this one, which forwards what is for the others' queues.
  const peers = spread ? await startSpreadPeers(storeFlags, peerDirs, profile) : [];
  const stopBroker = process_.stop;
  const stop = async () => {
    await Promise.all([stopBroker(), ...peers.map((peer) => peer.stop())]);
  };
  // Spread over one broker too (`pnpm bench --scaling`): it serves once it owns every queue.
  if (spread) {
    await waitUntilSpread([endpoint, ...peers.map((peer) => peer.banner)]).catch(async (error: unknown) => {
      await stop();
      throw error;
    });
  }
  return Object.assign(process_, {
    endpoint,
    endpointFor: (transport: BenchTransport) => (transport === 'ws' ? endpoint : tcpEndpoint),
    grpcEndpoint: grpcUrl.replace(/^grpc:\/\//, ''),
    ...(peers.length > 0 ? { spreadPeers: peers } : {}),
    stop,
    [Symbol.asyncDispose]: stop,
  });
}

/** The broker the clients use and, with `--store-spread`, the others of its cluster. */
export function everyBrokerOf(broker: BenchProcess): readonly BenchProcess[] {
  return [broker, ...(broker.spreadPeers ?? [])];
}

/** Where spread peer `index` (1, 2, …) of a profiled broker writing to `out` writes its profile. */
export function peerProfilePath(out: string, index: number): string {
  return out.replace(/(\.\w+)$/, `-peer${index}$1`);
}

/**
 * The other brokers of a spread cluster on the store `storeFlags` name, each on its data
 * directory of `dataDirs`; with `profile`, each with the profile probe, writing beside the first
 * broker's profile (`broker.cpuprofile` → `broker-peer1.cpuprofile`, …).
 */
async function startSpreadPeers(
  storeFlags: readonly string[],
  dataDirs: readonly string[],
  profile: BrokerProfileOptions | undefined,
): Promise<BenchProcess[]> {
  const peers: BenchProcess[] = [];
  try {
    for (const [index, dataDir] of dataDirs.entries()) {
      const i = index + 1;
      const out = profile && peerProfilePath(profile.out, i);
      peers.push(
        await start(
          BROKER_MAIN,
          ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...storeFlags],
          /(?<=listening on )ws:\/\/127\.0\.0\.1:\d+/,
          () => rmSync(dataDir, { recursive: true, force: true }),
          profile ? ['--import', pathToFileURL(PROFILE_PROBE).href] : [],
          profile && out ? { RICOCHET_PROFILE_OUT: out, RICOCHET_PROFILE_KIND: profile.kind } : {},
        ),
      );
    }
  } catch (error) {
    await Promise.all(peers.map((peer) => peer.stop()));
    throw error;
  }
  return peers;
}

/**
 * A broker on the PostgreSQL store `storeFlags` names (`--store <url>` and any lease setting) that
 * another broker owns: resolved once it stands by, relaying from `endpoint` (the port it keeps);
 * `waitForOutput(/listening on/)` tells when it took over.
 */
export async function startStandbyBrokerProcess(
  storeFlags: readonly string[],
): Promise<BenchProcess & { readonly endpoint: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-bench-standby-'));
  const process_ = await start(
    BROKER_MAIN,
    ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...storeFlags],
    /standing by on ws:\/\/127\.0\.0\.1:\d+/,
    () => rmSync(dataDir, { recursive: true, force: true }),
    [],
    // Its info lines tell when its local copy is loaded (a standby logs little else).
    { RICOCHET_LOG_LEVEL: 'info' },
  );
  return Object.assign(process_, { endpoint: /ws:\/\/[\d.]+:\d+/.exec(process_.banner)?.[0] ?? '' });
}

/** The garbage collector's pauses of one kind since the last reading. */
export interface GcPauses {
  readonly count: number;
  readonly totalMs: number;
  readonly maxMs: number;
}

/** An event-loop delay, in ms beyond the probe's 1 ms timer, since the last reading. */
export interface EventLoopDelay {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly samples: number;
}

/**
 * A broker's event-loop delay and, over the same span, its garbage collector's pauses:
 * scavenges (`gcMinor`) and full collections (`gcMajor`).
 */
export interface BrokerLoopReading extends EventLoopDelay {
  readonly gcMinor: GcPauses;
  readonly gcMajor: GcPauses;
}

/**
 * Read (and start over) the event-loop delay histogram of a broker started with
 * `eventLoopProbe`: read once before a workload to start its window, once after to get it.
 */
export async function brokerEventLoopDelay(broker: BenchProcess): Promise<BrokerLoopReading> {
  const match = await broker.signalForOutput('SIGUSR2', /event-loop-delay (\{.*\})\n/, 10_000);
  return JSON.parse(match[1] ?? '{}') as BrokerLoopReading;
}

/** A broker the soak kills with SIGKILL and starts again on the same port and data directory. */
export interface KillableBroker {
  readonly endpoint: string;
  readonly port: number;
  /** SIGKILL: no drain, no flush; resolves once the process is gone. */
  kill9(): Promise<void>;
  /** Whether it serves (printed `listening on`), rather than standing by on a shared store. */
  serving(): boolean;
  /** Its resident memory now (Linux /proc). */
  memory(): ResidentMemory;
  /** Its CPU time so far, in ms (Linux /proc). */
  cpuTimeMs(): number;
}

/**
 * The built broker on `dataDir`, on `port` (0 picks one), with `extraArgs` (a shared store's
 * `--store`); the caller owns the directory. Resolves once it listens, as the owner of its store
 * or as a standby.
 */
export async function startKillableBroker(
  dataDir: string,
  port = 0,
  extraArgs: readonly string[] = [],
): Promise<KillableBroker> {
  const process_ = await start(
    BROKER_MAIN,
    ['--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir, ...extraArgs],
    /ws:\/\/127\.0\.0\.1:\d+/,
  );
  const { child } = process_;
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    endpoint: process_.banner,
    port: Number(/\d+$/.exec(process_.banner)?.[0]),
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    serving: () => process_.hasPrinted(/listening on ws:\/\//),
    memory: process_.memory,
    cpuTimeMs: () => cpuTimeOf(child.pid ?? 0),
  };
}

/** The bare ws + msgpackr reference server. */
export async function startReferenceProcess(): Promise<BenchProcess & { readonly url: string }> {
  const process_ = await start(REFERENCE_MAIN, [], /listening on (\d+)/);
  const port = /\d+/.exec(process_.banner)?.[0];
  return Object.assign(process_, { url: `ws://127.0.0.1:${port}` });
}
