import type { ResidentMemory } from '../processes.js';
import type { ManyTenantsSummary } from '../workloads/many-tenants.js';
import type { StartupTimes } from '../workloads/restart-after-kill.js';
import type { LatencySummary } from '../workloads/w3-latency.js';
import { count } from './side-by-side.js';

/**
 * The lines `pnpm bench` prints for the workloads that measure one broker process rather than
 * compare systems (`pending`, `many-tenants`): memory, start-up after kill -9, latencies.
 */
const ms = (n: number) => `${n.toFixed(2)} ms`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

export function memoryText(m: ResidentMemory): string {
  return `anon ${mb(m.anonBytes)}, file-backed ${mb(m.fileBytes)} (RSS ${mb(m.rssBytes)})`;
}

export function startupText(s: StartupTimes): string {
  return `listening ${ms(s.listeningMs)} (CPU ${ms(s.listeningCpuMs)}), /healthz ${ms(s.healthyMs)}, push consumer served ${ms(s.pushServedMs)}`;
}

/** p50, p99 and max of a latency (or lateness) distribution. */
export const latencyText = (l: LatencySummary) => `p50 ${ms(l.p50Ms)} p99 ${ms(l.p99Ms)} max ${ms(l.maxMs)}`;

/** Bytes per tenant between two readings, of the anonymous (heap and private) memory and of RSS. */
function perTenantText(before: ResidentMemory, after: ResidentMemory, tenants: number): string {
  const kb = (bytes: number) => `${(bytes / tenants / 1024).toFixed(2)} KB`;
  return `anon ${kb(after.anonBytes - before.anonBytes)}, RSS ${kb(after.rssBytes - before.rssBytes)} per tenant`;
}

/** `many-tenants`: each figure beside its target (issue 43 item 6). */
export function manyTenantsLines(r: ManyTenantsSummary, inFlight: number, sends: number): string[] {
  const ratio = (l: LatencySummary) => (l.p50Ms / r.sendNone.p50Ms).toFixed(2);
  return [
    `Many tenants: ${count(r.tenants)} topics and groups over the admin API, ${inFlight} requests in flight`,
    `  create                         ${(r.createMs / 1_000).toFixed(1)} s (broker CPU ${(r.createCpuMs / 1_000).toFixed(1)} s), ${ms(r.createMs / r.tenants)} per tenant`,
    `  memory without them            ${memoryText(r.idle)}`,
    `  memory with them               ${memoryText(r.withTenants)}: ${perTenantText(r.idle, r.withTenants, r.tenants)}   (target: ≤ 2.9 KB)`,
    `  memory after kill -9 + start   ${memoryText(r.afterRestart)}: ${perTenantText(r.idle, r.afterRestart, r.tenants)}`,
    `  start after kill -9, without them  ${startupText(r.baselineStartup)}`,
    `  start after kill -9, with them     ${startupText(r.tenantsStartup)}   (3.2 s before)`,
    `  ${count(sends)} sends one at a time, without them        ${latencyText(r.sendNone)}`,
    `  with them                                ${latencyText(r.sendWithTenants)}   p50 ÷ without: ${ratio(r.sendWithTenants)} (target ≤ 1.2)`,
    `  with them, after kill -9 + start         ${latencyText(r.sendAfterRestart)}   p50 ÷ without: ${ratio(r.sendAfterRestart)}`,
  ];
}
