import { stopBenchStore, useBenchStore } from './bench-store.js';
import type { Throughput } from './measured-window.js';
import { PeerUnavailableError } from './peers/debian-package.js';
import {
  jetStreamW1,
  jetStreamW2,
  jetStreamW2c10,
  jetStreamW2s,
  jetStreamW3,
  jetStreamW4,
} from './peers/jetstream-workloads.js';
import { rabbitMqW1, rabbitMqW2, rabbitMqW2c10, rabbitMqW3, rabbitMqW4 } from './peers/rabbitmq-workloads.js';
import type { BenchTransport } from './processes.js';
import { startBrokerProcess } from './processes.js';
import { BenchArgsError, parseBenchArgs } from './report/bench-args.js';
import { latencyText, manyTenantsLines, memoryText, startupText } from './report/process-figures.js';
import { ROWS, WORKLOAD_SIZES } from './report/row-specs.js';
import {
  count,
  formatSideBySide,
  median,
  type Outcome,
  type Row,
  type RowSpec,
  SYSTEM_LABELS,
  SYSTEMS,
  type SystemName,
} from './report/side-by-side.js';
import { gcOutcome, runQueueOutcome } from './report/w3-thread-figures.js';
import { runScalingBench } from './scaling/run-scaling.js';
import { CREATE_IN_FLIGHT, MANY_TENANTS_SENDS, runManyTenants } from './workloads/many-tenants.js';
import { PENDING_RETRIES, runPendingRetries } from './workloads/pending-retries.js';
import { PROBE_MESSAGES } from './workloads/retry-probe.js';
import { rocketMqW1, rocketMqW2s } from './workloads/rocketmq-grpc.js';
import { rawGrpcW1, rawGrpcW2s } from './workloads/rocketmq-grpc-raw.js';
import { runSpreadTakeover, type SpreadTakeoverFigures } from './workloads/spread-takeover.js';
import {
  LARGE_STORE_MESSAGES,
  runLargeTakeover,
  runTakeover,
  TAKEOVER_LEASE_MS,
  type TakeoverFigures,
} from './workloads/takeover.js';
import { runW1 } from './workloads/w1-publish.js';
import { runW2 } from './workloads/w2-push-consume.js';
import { type GroupConsumeFigures, runW2c10 } from './workloads/w2c10-group-consume.js';
import { runW2s } from './workloads/w2s-simple-consume.js';
import { runW3 } from './workloads/w3-latency.js';
import { runW4EventsListener } from './workloads/w4-events-listener.js';
import { runW4 } from './workloads/w4-retry.js';
import { runX5 } from './workloads/x5-delivery-rate.js';

/**
 * `pnpm bench [--peers] [--runs N] [--tenants N] [--store lmdb|postgres] [--store-queues N] [--store-spread N] [w1 w2s w2 w2c10 w3 w4 x5 pending many-tenants takeover]`: every workload against the broker
 * (a child process, fsync on every commit) and, in the same run, the bare ws + msgpackr reference
 * with the same client pattern; with `--peers` also NATS JetStream and RabbitMQ quorum queues.
 * Prints one table, each figure the median of the runs, with ricochet's ratio to every other system.
 * W1, W2 and W3 run ricochet over WebSocket and over TCP, each on a fresh broker: the TCP rows sit
 * beside the same reference, and the TCP ÷ WebSocket ratios follow the table; W1 runs over HTTP too.
 * `takeover` kills an owner beside a standby, or with `--store-spread` one of two brokers sharing
 * the queues (workloads/spread-takeover.ts). `pnpm bench --scaling [--cpu-cap N]` runs W1 and W2
 * on 1, 2 and 3 CPU-capped brokers instead (scaling/run-scaling.ts).
 */
let args: ReturnType<typeof parseBenchArgs>;
try {
  args = parseBenchArgs(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof BenchArgsError)) throw error;
  console.error(`pnpm bench: ${error.message}`);
  process.exit(2);
}
if (args.scaling !== undefined) {
  // Its own table (columns are broker counts, not systems); nothing else runs.
  await runScalingBench({ ...args, scaling: args.scaling });
  await stopBenchStore();
  process.exit();
}
const systems: readonly SystemName[] = args.peers ? SYSTEMS : ['ricochet', 'reference'];
useBenchStore(args);
const rows = new Map<RowSpec, Partial<Record<SystemName, Outcome[]>>>();
const durability = new Set<string>();
/** A peer that could not be had once (not installed, no root) is not tried again in this bench. */
const peerDown = new Map<SystemName, string>();
/** Per throughput row, ricochet over TCP ÷ over WebSocket, one ratio per run. */
const tcpOverWs = new Map<string, number[]>();
/** W2c10 ÷ W2 over WebSocket, per system, one ratio per run where both ran. */
const groupOverOne = new Map<SystemName, number[]>();
/** W2's rate over WebSocket in the current run, per system, for that ratio. */
const w2RateThisRun = new Map<SystemName, number>();
/** W1 over HTTP ÷ over WebSocket, one ratio per run. */
const httpOverWs: number[] = [];
/** W1 and W2s via RocketMQ gRPC with Apache's Node client ÷ with Ricochet's own clients over WebSocket, one ratio per run. */
const grpcOverWs = new Map<string, number[]>();
/**
 * Issue 44's measure: the broker's CPU per message via RocketMQ gRPC (the load generator's rows)
 * ÷ through Ricochet's own protocol over WebSocket, per workload, one ratio per run; and each
 * path's CPU per message, µs, one figure per run.
 */
const grpcCpuOverOwn = new Map<string, number[]>();
const brokerCpuUs = new Map<string, number[]>();

const append = (map: Map<string, number[]>, key: string, value: number) =>
  map.set(key, [...(map.get(key) ?? []), value]);

/** A gRPC row (Apache's client or the load generator) beside the reference, and its ratios to the own protocol's run. */
function recordGrpc(
  row: RowSpec,
  ownRow: RowSpec,
  grpc: Throughput,
  own: Throughput,
  reference: number,
  client: 'official' | 'load generator',
): void {
  record(row, 'ricochet', figures(grpc));
  record(row, 'reference', figures({ rate: reference }));
  const workload = ownRow.label.split(' ')[0] ?? ownRow.label;
  append(
    brokerCpuUs,
    `${workload} via gRPC, ${client === 'official' ? "Apache's Node client" : 'load generator'}`,
    grpc.brokerCpuUs,
  );
  if (client === 'official') append(grpcOverWs, ownRow.label, grpc.rate / own.rate);
  else append(grpcCpuOverOwn, workload, grpc.brokerCpuUs / own.brokerCpuUs);
}

function record(spec: RowSpec, system: SystemName, outcome: Outcome, progress = true): void {
  const runs = rows.get(spec) ?? {};
  rows.set(spec, runs);
  runs[system] = [...(runs[system] ?? []), outcome];
  if (!progress) return;
  // Progress on stderr, so a long run shows where it is; the table on stdout is the result.
  const shown = 'figures' in outcome ? JSON.stringify(outcome.figures) : JSON.stringify(outcome);
  console.error(`  ${system}: ${shown}`);
}

const figures = (values: object): Outcome => ({ figures: values as Record<string, number> });

/** Run a peer's workload; what goes wrong becomes its `unavailable` cell, never a crash of the bench. */
async function runPeer<T>(system: SystemName, work: () => Promise<T>): Promise<{ value: T } | Outcome> {
  const down = peerDown.get(system);
  if (down !== undefined) return { unavailable: down };
  try {
    return { value: await work() };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (error instanceof PeerUnavailableError) peerDown.set(system, reason);
    return { unavailable: reason.split('\n')[0] ?? reason };
  }
}

async function peerRow(spec: RowSpec, system: SystemName, work: () => Promise<object>): Promise<void> {
  const result = await runPeer(system, work);
  record(spec, system, 'value' in result ? figures(result.value) : result);
}

/** W2c10's figures: the rate on one row, the fairness on the next, and the ratio to this run's W2. */
function recordW2c10(system: SystemName, outcome: Outcome): void {
  record(ROWS.w2c10, system, outcome);
  record(ROWS.w2c10Fairness, system, outcome, false);
  const w2Rate = w2RateThisRun.get(system);
  if (!('figures' in outcome) || w2Rate === undefined) return;
  const ratio = (outcome.figures.rate ?? Number.NaN) / w2Rate;
  groupOverOne.set(system, [...(groupOverOne.get(system) ?? []), ratio]);
}

async function peerW2c10(system: SystemName, work: () => Promise<GroupConsumeFigures>): Promise<void> {
  const result = await runPeer(system, work);
  recordW2c10(system, 'value' in result ? figures(result.value) : result);
}

async function peerW4(
  system: SystemName,
  work: () => Promise<{ cold: object; warm: object }>,
): Promise<void> {
  const result = await runPeer(system, work);
  record(ROWS.w4Cold, system, 'value' in result ? figures(result.value.cold) : result);
  record(ROWS.w4Warm, system, 'value' in result ? figures(result.value.warm) : result);
}

/**
 * Ricochet over WebSocket on the row the peers share, over TCP on a row of its own (each beside the
 * same reference run), and the TCP ÷ WS ratio of this run for the summary under the table.
 */
function recordByTransport(
  wsRow: RowSpec,
  tcpRow: RowSpec,
  ricochet: Record<BenchTransport, number>,
  reference: number,
): void {
  record(wsRow, 'ricochet', figures({ rate: ricochet.ws }));
  record(wsRow, 'reference', figures({ rate: reference }));
  record(tcpRow, 'ricochet', figures({ rate: ricochet.tcp }));
  record(tcpRow, 'reference', figures({ rate: reference }));
  const ratios = tcpOverWs.get(wsRow.label) ?? [];
  tcpOverWs.set(wsRow.label, [...ratios, ricochet.tcp / ricochet.ws]);
}

console.log(
  `node ${process.version}, ${new Date().toISOString()}, ${args.runs} run(s), systems: ${systems.join(', ')}, ricochet's store: ${args.store === 'lmdb' ? 'embedded LMDB' : `PostgreSQL (one local server, fsync on${args.storeQueues > 1 ? `, ${args.storeQueues} queues` : ''}${args.spreadBrokers > 1 ? ` spread over ${args.spreadBrokers} brokers, the clients on one` : ''})`}`,
);
for (let run = 1; run <= args.runs; run++) {
  w2RateThisRun.clear();
  for (const workload of args.workloads) {
    if (workload === 'pending' || workload === 'many-tenants' || workload === 'takeover') continue;
    console.error(`${workload} run ${run}/${args.runs}`);
    if (workload === 'w1') {
      const { ricochet, http, reference } = await runW1();
      recordByTransport(ROWS.w1, ROWS.w1Tcp, { ws: ricochet.ws.rate, tcp: ricochet.tcp.rate }, reference);
      record(ROWS.w1Http, 'ricochet', figures({ rate: http.rate }));
      record(ROWS.w1Http, 'reference', figures({ rate: reference }));
      httpOverWs.push(http.rate / ricochet.ws.rate);
      append(brokerCpuUs, 'W1 own protocol over WebSocket', ricochet.ws.brokerCpuUs);
      recordGrpc(ROWS.w1Grpc, ROWS.w1, await rocketMqW1(), ricochet.ws, reference, 'official');
      recordGrpc(ROWS.w1GrpcRaw, ROWS.w1, await rawGrpcW1(), ricochet.ws, reference, 'load generator');
      if (args.peers) {
        await peerRow(ROWS.w1, 'jetstream', async () => ({ rate: await jetStreamW1(durability) }));
        await peerRow(ROWS.w1, 'rabbitmq', async () => ({ rate: await rabbitMqW1(durability) }));
      }
    } else if (workload === 'w2s') {
      const { ricochet, reference } = await runW2s();
      record(ROWS.w2s, 'ricochet', figures({ rate: ricochet.rate }));
      record(ROWS.w2s, 'reference', figures({ rate: reference }));
      append(brokerCpuUs, 'W2s own protocol over WebSocket', ricochet.brokerCpuUs);
      recordGrpc(ROWS.w2sGrpc, ROWS.w2s, await rocketMqW2s(), ricochet, reference, 'official');
      recordGrpc(ROWS.w2sGrpcRaw, ROWS.w2s, await rawGrpcW2s(), ricochet, reference, 'load generator');
      if (args.peers) {
        await peerRow(ROWS.w2s, 'jetstream', async () => ({ rate: await jetStreamW2s(durability) }));
        record(ROWS.w2s, 'rabbitmq', {
          notApplicable: 'AMQP 0-9-1 has no batched pull receive (basic.get takes one message)',
        });
      }
    } else if (workload === 'w2') {
      const { ricochet, reference } = await runW2();
      recordByTransport(ROWS.w2, ROWS.w2Tcp, ricochet, reference);
      w2RateThisRun.set('ricochet', ricochet.ws);
      w2RateThisRun.set('reference', reference);
      if (args.peers) {
        await peerRow(ROWS.w2, 'jetstream', async () => {
          const rate = await jetStreamW2(durability);
          w2RateThisRun.set('jetstream', rate);
          return { rate };
        });
        await peerRow(ROWS.w2, 'rabbitmq', async () => {
          const rate = await rabbitMqW2(durability);
          w2RateThisRun.set('rabbitmq', rate);
          return { rate };
        });
      }
    } else if (workload === 'w2c10') {
      const { ricochet, reference } = await runW2c10();
      recordW2c10('ricochet', figures(ricochet));
      recordW2c10('reference', figures(reference));
      if (args.peers) {
        await peerW2c10('jetstream', () => jetStreamW2c10(durability));
        await peerW2c10('rabbitmq', () => rabbitMqW2c10(durability));
      }
    } else if (workload === 'w3') {
      const { ricochet, reference, warmUp, brokerEventLoop, runQueue } = await runW3();
      record(ROWS.w3, 'ricochet', figures(ricochet.ws));
      record(ROWS.w3, 'reference', figures(reference));
      record(ROWS.w3WarmUp, 'ricochet', figures(warmUp.ricochet));
      record(ROWS.w3WarmUp, 'reference', figures(warmUp.reference));
      record(ROWS.w3EventLoop, 'ricochet', figures(brokerEventLoop.ws));
      record(ROWS.w3Gc, 'ricochet', gcOutcome(brokerEventLoop.ws));
      record(ROWS.w3RunQueue, 'ricochet', runQueueOutcome(runQueue.ricochet));
      record(ROWS.w3RunQueue, 'reference', runQueueOutcome(runQueue.reference));
      record(ROWS.w3Tcp, 'ricochet', figures(ricochet.tcp));
      record(ROWS.w3Tcp, 'reference', figures(reference));
      record(ROWS.w3TcpEventLoop, 'ricochet', figures(brokerEventLoop.tcp));
      if (args.peers) {
        await peerRow(ROWS.w3, 'jetstream', () => jetStreamW3(durability));
        await peerRow(ROWS.w3, 'rabbitmq', () => rabbitMqW3(durability));
      }
    } else if (workload === 'w4') {
      // Measured twice on one broker: cold (its first work after start), then warm on a new topic.
      await using broker = await startBrokerProcess();
      record(ROWS.w4Cold, 'ricochet', figures(await runW4(broker, 'w4')));
      record(ROWS.w4Warm, 'ricochet', figures(await runW4(broker, 'w4-warm')));
      const events = await runW4EventsListener(broker);
      record(ROWS.w4EventsNone, 'ricochet', figures(events.withoutListener));
      record(ROWS.w4EventsStuck, 'ricochet', figures(events.withStuckListener));
      if (args.peers) {
        await peerW4('jetstream', () => jetStreamW4(durability));
        await peerW4('rabbitmq', () => rabbitMqW4(durability));
      }
    } else if (workload === 'x5') {
      // Ricochet alone: the reference has no delivery rate to hold.
      record(ROWS.x5, 'ricochet', figures(await runX5()));
    }
  }
}

if (rows.size > 0) {
  const table = [...rows].map(([spec, runs]): Row => ({ spec, runs }));
  console.log(WORKLOAD_SIZES);
  console.log(formatSideBySide(table, systems).join('\n'));
  for (const [label, ratios] of tcpOverWs)
    console.log(`${label}: TCP ÷ WebSocket ${median(ratios).toFixed(2)} (median of ${ratios.length})`);
  for (const [system, ratios] of groupOverOne)
    console.log(
      `${ROWS.w2c10.label.split(',')[0]} ÷ W2 (one consumer), ${SYSTEM_LABELS[system]}: ${median(ratios).toFixed(2)} (median of ${ratios.length})`,
    );
  if (httpOverWs.length > 0)
    console.log(
      `${ROWS.w1.label}: HTTP ÷ WebSocket ${median(httpOverWs).toFixed(2)} (median of ${httpOverWs.length})`,
    );
  for (const [label, ratios] of grpcOverWs)
    console.log(
      `${label}: via RocketMQ gRPC with Apache's Node client ÷ Ricochet's client over WebSocket ${median(ratios).toFixed(2)} (median of ${ratios.length})`,
    );
  for (const [path, figures] of brokerCpuUs)
    console.log(
      `broker CPU per message, ${path}: ${median(figures).toFixed(1)} µs (median of ${figures.length})`,
    );
  for (const [workload, ratios] of grpcCpuOverOwn)
    console.log(
      `${workload} broker CPU per message, via RocketMQ gRPC (load generator) ÷ own protocol over WebSocket: ${median(ratios).toFixed(2)} (median of ${ratios.length}; target ≤ 2)`,
    );
  if (durability.size > 0)
    console.log(['durability of the peers, as run:', ...[...durability].map((d) => `  ${d}`)].join('\n'));
}

if (args.workloads.includes('pending')) {
  // Ricochet alone, and once whatever --runs says: it fills a million retries (minutes). On the
  // embedded store whatever --store says: it kills and restarts one broker on its data directory.
  const result = await runPendingRetries();
  console.log(
    `Pending retries: ${count(result.pending)} WaitingRetry (of ${count(PENDING_RETRIES)}); fill: sends ${(result.sendMs / 1_000).toFixed(1)} s + failures ${(result.failMs / 1_000).toFixed(1)} s`,
  );
  console.log(`  memory idle                 ${memoryText(result.idle)}`);
  console.log(`  memory with them pending    ${memoryText(result.withPending)}   (target anon ≤ 200 MB)`);
  console.log(`  memory after kill -9 + start ${memoryText(result.afterRestart)}`);
  console.log(`  start after kill -9, without them   ${startupText(result.baselineStartup)}`);
  console.log(
    `  start after kill -9, with them      ${startupText(result.pendingStartup)}   (target ≤ 10 s)`,
  );
  console.log(
    `  retry lateness (${count(PROBE_MESSAGES)} × 100 ms at 500/s), without them   ${latencyText(result.baselineLateness)}`,
  );
  console.log(
    `  retry lateness, with them pending                ${latencyText(result.pendingLateness)}   (target p99 within 5 ms of without: ${(result.pendingLateness.p99Ms - result.baselineLateness.p99Ms).toFixed(2)} ms)`,
  );
}

if (args.workloads.includes('many-tenants')) {
  // Ricochet alone, once, on the embedded store: it kills and restarts one broker on its data directory.
  console.error(`many-tenants: ${count(args.tenants)} tenants`);
  const result = await runManyTenants(args.tenants);
  console.log(manyTenantsLines(result, CREATE_IN_FLIGHT, MANY_TENANTS_SENDS).join('\n'));
}

if (args.workloads.includes('takeover')) {
  if (args.store !== 'postgres') {
    console.log('Takeover: skipped (brokers share a store only with --store postgres)');
  } else if (args.spreadBrokers > 1) {
    // Issue 31 item 4: the same kill -9 with the queues spread, beside active/standby's figures.
    const runs: SpreadTakeoverFigures[] = [];
    for (let run = 1; run <= args.runs; run++) {
      console.error(`spread takeover run ${run}/${args.runs}`);
      runs.push(await runSpreadTakeover());
      console.error(`  ricochet: ${JSON.stringify(runs.at(-1))}`);
    }
    const show = (pick: (figures: SpreadTakeoverFigures) => number) =>
      `${median(runs.map(pick)).toFixed(0)} ms (runs: ${runs.map((r) => pick(r).toFixed(0)).join(', ')})`;
    console.log(
      `Takeover, ${args.storeQueues} queues spread over 2 brokers on one PostgreSQL database, lease ${TAKEOVER_LEASE_MS} ms:`,
    );
    console.log(`  kill -9 of a broker → the other owns every queue    ${show((r) => r.afterKillMs)}`);
    console.log(
      `  kill -9 of a broker → first send to its queue acked ${show((r) => r.firstSendAfterKillMs)}`,
    );
    console.log(`  SIGTERM of a broker → the other owns every queue    ${show((r) => r.afterStopMs)}`);
  } else {
    const runs: (TakeoverFigures & { readonly largeStoreAfterKillMs: number })[] = [];
    for (let run = 1; run <= args.runs; run++) {
      console.error(`takeover run ${run}/${args.runs}`);
      const figures = await runTakeover();
      runs.push({ ...figures, largeStoreAfterKillMs: await runLargeTakeover() });
    }
    const show = (pick: (figures: (typeof runs)[number]) => number) =>
      `${median(runs.map(pick)).toFixed(0)} ms (runs: ${runs.map((r) => pick(r).toFixed(0)).join(', ')})`;
    console.log(`Takeover, owner and standby on one PostgreSQL database, lease ${TAKEOVER_LEASE_MS} ms:`);
    console.log(`  kill -9 of the owner → standby serving         ${show((r) => r.afterKillMs)}`);
    console.log(`  kill -9 of the owner → first send acknowledged ${show((r) => r.firstSendAfterKillMs)}`);
    console.log(`  SIGTERM of the owner → standby serving         ${show((r) => r.afterStopMs)}`);
    console.log(
      `  kill -9 → standby serving, ${LARGE_STORE_MESSAGES.toLocaleString('en-US')} messages stored ${show((r) => r.largeStoreAfterKillMs)}`,
    );
  }
}

await stopBenchStore();
