import type { BenchTransport, ResidentMemory } from './processes.js';
import { BENCH_TRANSPORTS, startBrokerProcess } from './processes.js';
import { PENDING_RETRIES, runPendingRetries, type StartupTimes } from './workloads/pending-retries.js';
import { type LatenessSummary, PROBE_MESSAGES } from './workloads/retry-probe.js';
import { runW1, W1_HTTP_MESSAGES, W1_MESSAGES } from './workloads/w1-publish.js';
import { runW2, W2_MESSAGES } from './workloads/w2-push-consume.js';
import { runW2s, W2S_MESSAGES } from './workloads/w2s-simple-consume.js';
import { runW3, W3_MESSAGES } from './workloads/w3-latency.js';
import { runW4, W4_MESSAGES } from './workloads/w4-retry.js';

/**
 * `pnpm bench`: every workload against the broker (a child process, fsync on every commit) and,
 * in the same run, the bare ws + msgpackr reference with the same client pattern. W1, W2 and W3
 * run over WebSocket and over TCP side by side, with the ratio TCP ÷ WS; W1 runs over HTTP too.
 * `pnpm bench w1 w2s` runs a subset: w1, w2s, w2, w3, w4, pending.
 */
const selected = new Set(process.argv.slice(2).map((name) => name.toLowerCase()));
const wanted = (name: string) => selected.size === 0 || selected.has(name);
const count = (n: number) => n.toLocaleString('en');
const ms = (n: number) => `${n.toFixed(2)} ms`;

function throughput(name: string, ricochet: number, reference: number, target: string): void {
  console.log(
    `${name.padEnd(36)} ricochet ${count(Math.round(ricochet)).padStart(9)} msg/s   reference ${count(Math.round(reference)).padStart(9)} msg/s   ratio ${(ricochet / reference).toFixed(2)}   (target ${target})`,
  );
}

console.log(`node ${process.version}, ${new Date().toISOString()}`);
/** Ricochet over WebSocket and over TCP, each against the reference, and TCP ÷ WS. */
function throughputByTransport(
  name: string,
  ricochet: Record<BenchTransport, number>,
  reference: number,
  target: string,
): void {
  throughput(`${name} ws`, ricochet.ws, reference, target);
  throughput(`${name} tcp`, ricochet.tcp, reference, target);
  console.log(`${name} TCP ÷ WS ${(ricochet.tcp / ricochet.ws).toFixed(2)}`);
}

if (wanted('w1')) {
  const { ricochet, http, reference } = await runW1();
  throughputByTransport(`W1 publish (${count(W1_MESSAGES)} × 256 B)`, ricochet, reference, '≥ 0.85');
  // No target: HTTP is for runtimes that cannot keep a socket open, not for throughput.
  throughput(`W1 publish (${count(W1_HTTP_MESSAGES)} × 256 B) http`, http, reference, 'none');
  console.log(`W1 publish HTTP ÷ WS ${(http / ricochet.ws).toFixed(2)}`);
}
if (wanted('w2s')) {
  const { ricochet, reference } = await runW2s();
  throughput(`W2s receive+ack (${count(W2S_MESSAGES)})`, ricochet, reference, '≥ 0.50');
}
if (wanted('w2')) {
  const { ricochet, reference } = await runW2();
  throughputByTransport(`W2 push consume (${count(W2_MESSAGES)})`, ricochet, reference, '≥ 1.00');
}
if (wanted('w3')) {
  const { ricochet, reference } = await runW3();
  for (const transport of BENCH_TRANSPORTS) {
    const latency = ricochet[transport];
    console.log(
      `W3 latency (${count(W3_MESSAGES)} at 2,000/s) ${transport.padEnd(3)}    ricochet p50 ${ms(latency.p50Ms)} p99 ${ms(latency.p99Ms)} max ${ms(latency.maxMs)}   reference p50 ${ms(reference.p50Ms)} p99 ${ms(reference.p99Ms)} max ${ms(reference.maxMs)}   (target p99 ≤ 1.5 ms)`,
    );
  }
  console.log(
    `W3 latency TCP ÷ WS   p50 ${(ricochet.tcp.p50Ms / ricochet.ws.p50Ms).toFixed(2)}   p99 ${(ricochet.tcp.p99Ms / ricochet.ws.p99Ms).toFixed(2)}`,
  );
}
if (wanted('w4')) {
  // Measured twice on one broker: cold (its first work after start), then warm on a new topic.
  await using broker = await startBrokerProcess();
  for (const [round, topic] of [
    ['cold', 'w4'],
    ['warm', 'w4-warm'],
  ] as const) {
    const result = await runW4(broker, topic);
    console.log(
      `W4 retry (${count(W4_MESSAGES)} × fail once, 200 ms), ${round}   total ${ms(result.totalMs)}   lateness p50 ${ms(result.latenessP50Ms)} p99 ${ms(result.latenessP99Ms)}   (target total ≤ 600 ms, p99 ≤ 10 ms)`,
    );
  }
}
if (wanted('pending')) {
  const result = await runPendingRetries();
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
  const memory = (m: ResidentMemory) =>
    `anon ${mb(m.anonBytes)}, file-backed ${mb(m.fileBytes)} (RSS ${mb(m.rssBytes)})`;
  const lateness = (l: LatenessSummary) => `p50 ${ms(l.p50Ms)} p99 ${ms(l.p99Ms)} max ${ms(l.maxMs)}`;
  const startup = (s: StartupTimes) =>
    `listening ${ms(s.listeningMs)} (CPU ${ms(s.listeningCpuMs)}), /healthz ${ms(s.healthyMs)}, push consumer served ${ms(s.pushServedMs)}`;
  console.log(
    `Pending retries: ${count(result.pending)} WaitingRetry (of ${count(PENDING_RETRIES)}); fill: sends ${(result.sendMs / 1_000).toFixed(1)} s + failures ${(result.failMs / 1_000).toFixed(1)} s`,
  );
  console.log(`  memory idle                 ${memory(result.idle)}`);
  console.log(`  memory with them pending    ${memory(result.withPending)}   (target anon ≤ 200 MB)`);
  console.log(`  memory after kill -9 + start ${memory(result.afterRestart)}`);
  console.log(`  start after kill -9, without them   ${startup(result.baselineStartup)}`);
  console.log(`  start after kill -9, with them      ${startup(result.pendingStartup)}   (target ≤ 10 s)`);
  console.log(
    `  retry lateness (${count(PROBE_MESSAGES)} × 100 ms at 500/s), without them   ${lateness(result.baselineLateness)}`,
  );
  console.log(
    `  retry lateness, with them pending                ${lateness(result.pendingLateness)}   (target p99 within 5 ms of without: ${(result.pendingLateness.p99Ms - result.baselineLateness.p99Ms).toFixed(2)} ms)`,
  );
}
