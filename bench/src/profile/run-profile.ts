import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { dirname, join, relative } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { stopBenchStore, useBenchStore } from '../bench-store.js';
import { cpuTimeOf } from '../cpu-time.js';
import type { MeasuredWindow } from '../measured-window.js';
import {
  type BenchProcess,
  type BrokerLoopReading,
  brokerEventLoopDelay,
  type EventLoopDelay,
  everyBrokerOf,
  peerProfilePath,
  startBrokerProcess,
} from '../processes.js';
import { ROCKETMQ_MESSAGES, rocketMqW1, rocketMqW2s } from '../workloads/rocketmq-grpc.js';
import { GRPC_RAW_MESSAGES, rawGrpcW1, rawGrpcW2s } from '../workloads/rocketmq-grpc-raw.js';
import { ricochetW1, W1_MESSAGES } from '../workloads/w1-publish.js';
import { ricochetW2, W2_MESSAGES } from '../workloads/w2-push-consume.js';
import { ricochetW2c10, W2C10_CONSUMERS } from '../workloads/w2c10-group-consume.js';
import { ricochetW2s, W2S_MESSAGES } from '../workloads/w2s-simple-consume.js';
import { ricochetW3, W3_MESSAGES } from '../workloads/w3-latency.js';
import { runW4, W4_MESSAGES } from '../workloads/w4-retry.js';
import {
  type CpuProfile,
  type CpuProfileSummary,
  type HeapProfile,
  type HeapProfileSummary,
  summarizeCpuProfile,
  summarizeHeapProfile,
} from './cpu-profile-summary.js';
import { type ProfileArgs, ProfileArgsError, parseProfileArgs } from './profile-args.js';

/**
 * `pnpm bench:profile <w1|w2|w2c10|w2s|w3|w4|w1-grpc|w2s-grpc|w1-grpc-raw|w2s-grpc-raw|idle> [--heap] [--top N] [--store lmdb|postgres]`: one workload
 * (or, `idle`, {@link IDLE_MS} of none: what a broker or a cluster spends doing nothing) against the broker (over WebSocket, on the chosen store), with V8's profiler on the broker and on the client process over the measured window
 * only, and, over the same window, both event loops' delay and both processes' CPU time per
 * message. Prints where the time (with `--heap`, the allocation) went and how long each event loop
 * was held at a time; writes the profiles under bench/profiles/ for DevTools (Performance or
 * Memory → Load profile).
 */
let args: ProfileArgs;
try {
  args = parseProfileArgs(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof ProfileArgsError)) throw error;
  console.error(`pnpm bench:profile: ${error.message}`);
  process.exit(2);
}

const kind = args.heap ? 'heap' : 'cpu';
const extension = args.heap ? 'heapprofile' : 'cpuprofile';
const outDir = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'profiles',
  `${args.workload}-${kind}-${new Date().toISOString().replace(/[:.]/g, '-')}`,
);
mkdirSync(outDir, { recursive: true });
const brokerOut = join(outDir, `broker.${extension}`);
const clientOut = join(outDir, `client.${extension}`);

/** What the window saw, besides the profiles. */
interface WindowReadings {
  /** The CPU time of each broker: the one the clients use, then its spread peers (`--store-spread`). */
  brokerCpuMs: number[];
  clientCpuMs: number;
  brokerLoop: BrokerLoopReading | undefined;
  clientLoop: EventLoopDelay;
}

/**
 * The measured window: the broker's profiler by signal (profile-probe.mjs), this process's through
 * the inspector, each event loop's delay histogram, each process's CPU time. `brokerLoop` false
 * leaves the broker's histogram to the workload (W3 reads it itself).
 */
function profilingWindow(brokerLoop: boolean): { window: MeasuredWindow; readings: () => WindowReadings } {
  const session = new Session();
  const clientHistogram = monitorEventLoopDelay({ resolution: 1 });
  let brokerCpuAtBegin: number[] = [];
  let clientCpuAtBegin = process.cpuUsage();
  let readings: WindowReadings | undefined;
  const window: MeasuredWindow = {
    async begin(broker: BenchProcess) {
      if (brokerLoop) await brokerEventLoopDelay(broker);
      await Promise.all(
        everyBrokerOf(broker).map((each) => each.signalForOutput('SIGTTIN', /profile-started/, 10_000)),
      );
      session.connect();
      if (args.heap) {
        await session.post('HeapProfiler.enable');
        await session.post('HeapProfiler.startSampling', {
          samplingInterval: 4_096,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        });
      } else {
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: 250 });
        await session.post('Profiler.start');
      }
      clientHistogram.reset();
      clientHistogram.enable();
      brokerCpuAtBegin = everyBrokerOf(broker).map((each) => cpuTimeOf(each.child.pid ?? 0));
      clientCpuAtBegin = process.cpuUsage();
    },
    async end(broker: BenchProcess) {
      const clientCpu = process.cpuUsage(clientCpuAtBegin);
      const brokerCpuMs = everyBrokerOf(broker).map(
        (each, index) => cpuTimeOf(each.child.pid ?? 0) - (brokerCpuAtBegin[index] ?? 0),
      );
      clientHistogram.disable();
      const profile = args.heap
        ? (await session.post('HeapProfiler.stopSampling')).profile
        : (await session.post('Profiler.stop')).profile;
      writeFileSync(clientOut, JSON.stringify(profile));
      session.disconnect();
      await Promise.all(
        everyBrokerOf(broker).map((each) => each.signalForOutput('SIGTTOU', /profile-written/, 60_000)),
      );
      const delayMs = (nanoseconds: number) => Math.max(0, nanoseconds / 1e6 - 1);
      readings = {
        brokerCpuMs,
        clientCpuMs: (clientCpu.user + clientCpu.system) / 1_000,
        brokerLoop: brokerLoop ? await brokerEventLoopDelay(broker) : undefined,
        clientLoop: {
          p50Ms: delayMs(clientHistogram.percentile(50)),
          p99Ms: delayMs(clientHistogram.percentile(99)),
          maxMs: delayMs(clientHistogram.max),
          samples: clientHistogram.count,
        },
      };
    },
  };
  return {
    window,
    readings: () => {
      if (!readings) throw new Error('the measured window never closed');
      return readings;
    },
  };
}

/** How long `idle` watches brokers that serve no client. */
const IDLE_MS = 10_000;

const profile = { out: brokerOut, kind } as const;
let messages: number;
let brokerLoop: BrokerLoopReading | undefined;
let outcome: string;
const { window, readings } = profilingWindow(args.workload !== 'w3');
useBenchStore(args);
switch (args.workload) {
  case 'w1':
    messages = W1_MESSAGES;
    outcome = `${Math.round((await ricochetW1('ws', W1_MESSAGES, { window, profile })).rate)} msg/s`;
    break;
  case 'w2':
    messages = W2_MESSAGES;
    outcome = `${Math.round(await ricochetW2('ws', { window, profile }))} msg/s`;
    break;
  case 'w2c10': {
    messages = W2_MESSAGES;
    const w2c10 = await ricochetW2c10({ window, profile });
    outcome = `${Math.round(w2c10.rate)} msg/s by ${W2C10_CONSUMERS} consumers, shares ${w2c10.minSharePercent.toFixed(2)}–${w2c10.maxSharePercent.toFixed(2)} %`;
    break;
  }
  case 'w2s':
    messages = W2S_MESSAGES;
    outcome = `${Math.round((await ricochetW2s({ window, profile })).rate)} msg/s`;
    break;
  case 'w1-grpc':
    messages = ROCKETMQ_MESSAGES;
    outcome = `${Math.round((await rocketMqW1({ window, profile })).rate)} msg/s via RocketMQ gRPC (Apache's Node client)`;
    break;
  case 'w2s-grpc':
    messages = ROCKETMQ_MESSAGES;
    outcome = `${Math.round((await rocketMqW2s({ window, profile })).rate)} msg/s via RocketMQ gRPC (Apache's Node client)`;
    break;
  case 'w1-grpc-raw':
    messages = GRPC_RAW_MESSAGES;
    outcome = `${Math.round((await rawGrpcW1({ window, profile })).rate)} msg/s via RocketMQ gRPC (load generator)`;
    break;
  case 'w2s-grpc-raw':
    messages = GRPC_RAW_MESSAGES;
    outcome = `${Math.round((await rawGrpcW2s({ window, profile })).rate)} msg/s via RocketMQ gRPC (load generator)`;
    break;
  case 'w3': {
    messages = W3_MESSAGES;
    const w3 = await ricochetW3('ws', { window, profile });
    brokerLoop = w3.eventLoop;
    outcome = `latency p50 ${ms(w3.latency.p50Ms)}, p99 ${ms(w3.latency.p99Ms)}, max ${ms(w3.latency.maxMs)}`;
    break;
  }
  case 'idle': {
    // Figures per second instead of per message: `messages` is the window's seconds.
    messages = IDLE_MS / 1_000;
    await using broker = await startBrokerProcess([], { eventLoopProbe: true, profile });
    await window.begin(broker);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    await window.end(broker);
    outcome = `${IDLE_MS / 1_000} s serving no client`;
    break;
  }
  case 'w4': {
    // Deliveries, not messages: each fails once and is delivered again.
    messages = 2 * W4_MESSAGES;
    await using broker = await startBrokerProcess([], { eventLoopProbe: true, profile });
    const w4 = await runW4(broker, 'w4', window);
    outcome = `total ${ms(w4.totalMs)}, lateness p50 ${ms(w4.latenessP50Ms)}, p99 ${ms(w4.latenessP99Ms)}`;
    break;
  }
}
await stopBenchStore();

const seen = readings();
brokerLoop ??= seen.brokerLoop;
const perMessage = (cpuMs: number) =>
  args.workload === 'idle'
    ? `${(cpuMs / messages).toFixed(1)} ms per s`
    : `${((cpuMs * 1_000) / messages).toFixed(1)} µs per message`;
const loop = (delay: EventLoopDelay | undefined) =>
  delay ? `p50 ${ms(delay.p50Ms)}, p99 ${ms(delay.p99Ms)}, max ${ms(delay.maxMs)}` : 'not read';
/** The broker's GC pauses over the window, when its probe read them. */
const gcPauses = (reading: BrokerLoopReading | undefined) =>
  reading
    ? `; GC ${reading.gcMinor.count} scavenges (longest ${ms(reading.gcMinor.maxMs)}), ${reading.gcMajor.count} full (longest ${ms(reading.gcMajor.maxMs)})`
    : '';
console.log(`${args.workload.toUpperCase()} profiled (${kind}): ${outcome}`);
const brokerCpu =
  seen.brokerCpuMs.length === 1
    ? perMessage(seen.brokerCpuMs[0] ?? 0)
    : `${perMessage(seen.brokerCpuMs.reduce((sum, each) => sum + each, 0))} (${seen.brokerCpuMs.map(perMessage).join(' + ')}: the clients' broker, then its spread peers)`;
console.log(`  broker: CPU ${brokerCpu}, event-loop delay ${loop(brokerLoop)}${gcPauses(brokerLoop)}`);
console.log(`  client: CPU ${perMessage(seen.clientCpuMs)}, event-loop delay ${loop(seen.clientLoop)}`);
const peerOuts = seen.brokerCpuMs
  .slice(1)
  .map((_, index) => [`spread peer ${index + 1}`, peerProfilePath(brokerOut, index + 1)] as const);
for (const [side, file] of [['broker', brokerOut], ...peerOuts, ['client', clientOut]] as const) {
  const json = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  console.log(`\n${side}: ${relative(process.cwd(), file)}`);
  const lines = args.heap
    ? heapLines(summarizeHeapProfile(json as HeapProfile, args.top), messages)
    : cpuLines(summarizeCpuProfile(json as CpuProfile, args.top));
  for (const line of lines) console.log(line);
}

function cpuLines(summary: CpuProfileSummary): string[] {
  const busy = summary.busyRuns.map(({ atLeastMs, count }) => `≥${atLeastMs} ms: ${count}`).join(', ');
  return [
    `  ${summary.samples} samples over ${ms(summary.spanMs)}; idle ${percent(summary.idleShare)}, GC ${percent(summary.gcShare)}`,
    `  stretches without an idle sample (the loop busy throughout): ${busy}; longest ${ms(summary.longestBusyMs)}`,
    '  self:',
    ...summary.self.map(({ name, share }) => `    ${percent(share).padStart(6)}  ${name}`),
    '  inclusive:',
    ...summary.inclusive.map(({ name, share }) => `    ${percent(share).padStart(6)}  ${name}`),
  ];
}

function heapLines(summary: HeapProfileSummary, count: number): string[] {
  return [
    `  ${(summary.sampledBytes / 1024 / 1024).toFixed(1)} MiB sampled, ${(summary.sampledBytes / 1024 / count).toFixed(1)} KiB per message`,
    '  allocated by:',
    ...summary.self.map(({ name, share }) => `    ${percent(share).padStart(6)}  ${name}`),
  ];
}

function ms(value: number): string {
  return `${value.toFixed(2)} ms`;
}

function percent(share: number): string {
  return `${(share * 100).toFixed(1)} %`;
}
