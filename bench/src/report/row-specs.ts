import { ROCKETMQ_MESSAGES } from '../workloads/rocketmq-grpc.js';
import { GRPC_RAW_MESSAGES, GRPC_RAW_SESSIONS } from '../workloads/rocketmq-grpc-raw.js';
import { W1_HTTP_MESSAGES, W1_MESSAGES } from '../workloads/w1-publish.js';
import { W2_MESSAGES, W2_WARM_UP_MESSAGES } from '../workloads/w2-push-consume.js';
import { W2C10_CACHED_EACH, W2C10_CONSUMERS } from '../workloads/w2c10-group-consume.js';
import { W2S_MESSAGES } from '../workloads/w2s-simple-consume.js';
import { W3_MESSAGES, W3_WARM_UP_MESSAGES, W3_WARM_UP_SECONDS } from '../workloads/w3-latency.js';
import { W4_MESSAGES } from '../workloads/w4-retry.js';
import { X5_CONSUMERS, X5_LIMIT_PER_SECOND, X5_WINDOW_MS } from '../workloads/x5-delivery-rate.js';
import { count, fixed2, type RowSpec } from './side-by-side.js';

/** What the rows measure, printed above the table (the labels stay short). */
export const WORKLOAD_SIZES = `W1 ${count(W1_MESSAGES)} × 256 B (over HTTP ${count(W1_HTTP_MESSAGES)}, via RocketMQ gRPC ${count(ROCKETMQ_MESSAGES)}, with the gRPC load generator ${count(GRPC_RAW_MESSAGES)} on ${GRPC_RAW_SESSIONS === 1 ? 'one HTTP/2 connection' : `${GRPC_RAW_SESSIONS} HTTP/2 connections`}), 1,000 in flight; W2s, W2 and W2c10 ${count(W2_MESSAGES)} pre-published (W2 and W2c10 after a warm-up round of ${count(W2_WARM_UP_MESSAGES)}) (W2s ${count(W2S_MESSAGES)}; W2c10 by ${W2C10_CONSUMERS} consumers of one group, ${count(W2C10_CACHED_EACH)} cached each); W3 ${count(W3_MESSAGES)} at 2,000/s after a warm-up of ${count(W3_WARM_UP_MESSAGES)} (a row of its own); W4 ${count(W4_MESSAGES)} each failing once, retry after 200 ms, late = gap − 200 ms`;

/** The rows of `pnpm bench`'s table, with the targets of the latest performance round (issue 34). */
const rate = [{ key: 'rate', format: count }] as const;
/** A rate, and what each message cost the broker's and the client's CPU (µs). */
const rateAndCpu = [
  { key: 'rate', format: count },
  { key: 'brokerCpuUs', format: count },
  { key: 'clientCpuUs', format: count },
] as const;
const fairness = [
  { key: 'minSharePercent', format: fixed2 },
  { key: 'maxSharePercent', format: fixed2 },
  { key: 'minOverMax', format: fixed2 },
] as const;
const latency = [
  { key: 'p50Ms', format: fixed2 },
  { key: 'p99Ms', format: fixed2 },
  { key: 'maxMs', format: fixed2 },
] as const;
/** The broker's GC pauses over a window: scavenges, the longest, full collections, the longest. */
const gcPauses = [
  { key: 'minorCount', format: count },
  { key: 'minorMaxMs', format: fixed2 },
  { key: 'majorCount', format: count },
  { key: 'majorMaxMs', format: fixed2 },
] as const;
/** How long the server's and the client's main threads waited for a core, ms a second, and per wait in µs. */
const runQueue = [
  { key: 'serverWaitMsPerS', format: fixed2 },
  { key: 'serverWaitUsPerSlice', format: count },
  { key: 'clientWaitMsPerS', format: fixed2 },
  { key: 'clientWaitUsPerSlice', format: count },
] as const;
const retry = [
  { key: 'totalMs', format: count },
  { key: 'latenessP50Ms', format: fixed2 },
  { key: 'latenessP99Ms', format: fixed2 },
] as const;

export const ROWS = {
  w1: {
    label: 'W1 publish, msg/s',
    measures: rate,
    ratio: { key: 'rate', better: 'higher' },
    target: '≥ 0.9 × ref',
  },
  w2s: {
    label: 'W2s receive + ack, msg/s',
    measures: rate,
    ratio: { key: 'rate', better: 'higher' },
    target: '≥ 0.65 × ref W2',
  },
  w2: {
    label: 'W2 push consume + ack, msg/s',
    measures: rate,
    ratio: { key: 'rate', better: 'higher' },
    target: '≥ 0.85 × ref, ≥ 1.0 × JetStream',
  },
  w2c10: {
    label: `W2c10 push consume, ${W2C10_CONSUMERS} consumers, msg/s`,
    measures: rate,
    ratio: { key: 'rate', better: 'higher' },
    target: '– (beside W2: the cost of more consumers)',
  },
  w2c10Fairness: {
    label: 'W2c10 share per consumer min % / max % / min÷max',
    measures: fairness,
    ratio: { key: 'minOverMax', better: 'higher' },
    target: '– (10 % each is even; min÷max 1.00)',
  },
  w3: {
    label: 'W3 latency p50 / p99 / max, ms',
    measures: latency,
    ratio: { key: 'p99Ms', better: 'lower' },
    target: 'p99 ≤ 1.5 × ref and < both peers, max ≤ 5 (issue 43)',
  },
  w3WarmUp: {
    label: `W3 latency over the warm-up (the server's first ${W3_WARM_UP_SECONDS} s), ms`,
    measures: latency,
    ratio: { key: 'p99Ms', better: 'lower' },
    target: '– (start-up: the JIT still compiling; the row above is the loop)',
  },
  w3EventLoop: {
    label: 'W3 broker event-loop delay, ms',
    measures: latency,
    target: 'each stall ≤ ~1 ms',
  },
  w3Gc: {
    label: 'W3 broker GC: scavenges / longest ms, full / longest ms',
    measures: gcPauses,
    target: '– (what of the stalls is the collector)',
  },
  w3RunQueue: {
    label: 'W3 main threads waiting for a core: server ms/s / µs a wait, client ms/s / µs a wait',
    measures: runQueue,
    ratio: { key: 'serverWaitMsPerS', better: 'lower' },
    target: '– (ready to run without a core: tail latency the loop delay cannot see)',
  },
  w1Tcp: {
    label: 'W1 publish over TCP, msg/s',
    measures: rate,
    ratio: { key: 'rate', better: 'higher' },
    target: 'TCP the fastest path',
  },
  w1Grpc: {
    label: 'W1 publish via RocketMQ gRPC (Apache Node client), msg/s / broker, client CPU µs/msg',
    measures: rateAndCpu,
    ratio: { key: 'rate', better: 'higher' },
    target: '– (the official client, one call per send)',
  },
  w2sGrpc: {
    label: 'W2s via RocketMQ gRPC (Apache Node client), msg/s / broker, client CPU µs/msg',
    measures: rateAndCpu,
    ratio: { key: 'rate', better: 'higher' },
    target: '– (the official client)',
  },
  w1GrpcRaw: {
    label: 'W1 publish via RocketMQ gRPC (load generator), msg/s / broker, client CPU µs/msg',
    measures: rateAndCpu,
    ratio: { key: 'rate', better: 'higher' },
    target: '≥ 25,000 msg/s; broker CPU ≤ 2 × own protocol (issue 44)',
  },
  w2sGrpcRaw: {
    label: 'W2s via RocketMQ gRPC (load generator), msg/s / broker, client CPU µs/msg',
    measures: rateAndCpu,
    ratio: { key: 'rate', better: 'higher' },
    target: '≥ 20,000 msg/s; broker CPU ≤ 2 × own protocol (issue 44)',
  },
  w1Http: {
    label: 'W1 publish over HTTP, msg/s',
    measures: rate,
    ratio: { key: 'rate', better: 'higher' },
    target: '– (one POST per send)',
  },
  w2Tcp: {
    label: 'W2 push consume over TCP, msg/s',
    measures: rate,
    ratio: { key: 'rate', better: 'higher' },
    target: 'TCP the fastest path',
  },
  w3Tcp: {
    label: 'W3 latency over TCP, ms',
    measures: latency,
    ratio: { key: 'p99Ms', better: 'lower' },
    target: 'TCP the fastest path',
  },
  w3TcpEventLoop: {
    label: 'W3 over TCP, broker event loop, ms',
    measures: latency,
    target: 'each stall ≤ ~1 ms',
  },
  w4Cold: {
    label: 'W4 cold: total / late p50 / p99, ms',
    measures: retry,
    ratio: { key: 'totalMs', better: 'lower' },
    target: 'p99 ≤ 0.5 × JetStream, total ≤ JetStream',
  },
  w4Warm: {
    label: 'W4 warm: total / late p50 / p99, ms',
    measures: retry,
    ratio: { key: 'totalMs', better: 'lower' },
    target: 'p99 ≤ 0.5 × JetStream, total ≤ JetStream',
  },
  w4EventsNone: {
    label: 'W4, a second group dead-lettering each message: total / late p50 / p99, ms',
    measures: retry,
    target: 'the baseline of the row below',
  },
  w4EventsStuck: {
    label: 'W4 as above, with an events listener that never reads, ms',
    measures: retry,
    target: 'total within 5 % of the row above (X7: the broker never waits for a listener)',
  },
  x5: {
    label: `X5 maxDeliveriesPerSecond ${X5_LIMIT_PER_SECOND}, ${X5_CONSUMERS} push consumers, ${X5_WINDOW_MS / 1_000} s, msg/s`,
    measures: rate,
    ratio: { key: 'rate', better: 'higher' },
    target: `${X5_LIMIT_PER_SECOND} ± 5 %`,
  },
} as const satisfies Record<string, RowSpec>;
