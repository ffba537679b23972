import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Producer } from '@ricochet/producer';
import { putGroup, putTopic } from '../admin.js';
import { runPool } from '../pool.js';
import { type KillableBroker, type ResidentMemory, startKillableBroker } from '../processes.js';
import { restartAfterKill, type StartupTimes, storeStartupMessage } from './restart-after-kill.js';
import { type LatencySummary, summarize } from './w3-latency.js';

/** Tenants `pnpm bench many-tenants` creates unless `--tenants N` says otherwise. */
export const DEFAULT_TENANTS = 100_000;
/**
 * Admin requests in flight while the tenants are created: an operator's script or a CLI loop run
 * in parallel, each request awaited, rather than one at a time (hours at 100,000) or all at once.
 */
export const CREATE_IN_FLIGHT = 32;
/** Sends measured one at a time, after {@link SEND_WARM_UP} unmeasured ones that let the JIT settle. */
export const MANY_TENANTS_SENDS = 2_000;
const SEND_WARM_UP = 500;
const SEND_TOPIC = 'many-tenants-send';
const BODY = new Uint8Array(256);
/** How long the broker is left alone before its memory is read: the garbage of what came before is collected. */
const SETTLE_MS = 2_000;

export interface ManyTenantsSummary {
  readonly tenants: number;
  /** Wall time to create every tenant's topic and group over the admin API. */
  readonly createMs: number;
  /** The broker's CPU time over the same span (what creation costs it, whatever else the machine runs). */
  readonly createCpuMs: number;
  /** The broker before the tenants (after a restart, as the one with them is measured after its own). */
  readonly idle: ResidentMemory;
  readonly withTenants: ResidentMemory;
  /** The same data directory after kill -9 and a start: the tenants loaded, none of their creation's garbage. */
  readonly afterRestart: ResidentMemory;
  /** One send at a time, each awaited: before the tenants, with them, and after the restart with them. */
  readonly sendNone: LatencySummary;
  readonly sendWithTenants: LatencySummary;
  readonly sendAfterRestart: LatencySummary;
  readonly baselineStartup: StartupTimes;
  readonly tenantsStartup: StartupTimes;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Many tenants on one broker: `tenants` topics and groups created over the admin API, as an
 * operator would, with {@link CREATE_IN_FLIGHT} requests in flight. On one data directory: memory
 * and one-at-a-time send latency before and with them, and the time to serve again after kill -9
 * without and with them. What the broker does per send or per turn must not grow with them.
 */
export async function runManyTenants(tenants: number): Promise<ManyTenantsSummary> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-bench-tenants-'));
  let broker = await startKillableBroker(dataDir);
  try {
    await storeStartupMessage(broker.endpoint);
    let baselineStartup: StartupTimes;
    [broker, baselineStartup] = await restartAfterKill(broker, dataDir, 'startup-baseline');
    await sleep(SETTLE_MS);
    const idle = broker.memory();
    const sendNone = await sendOneAtATime(broker.endpoint);

    const { createMs, createCpuMs } = await createTenants(broker, tenants);
    await sleep(SETTLE_MS);
    const withTenants = broker.memory();
    const sendWithTenants = await sendOneAtATime(broker.endpoint);

    let tenantsStartup: StartupTimes;
    [broker, tenantsStartup] = await restartAfterKill(broker, dataDir, 'startup-tenants');
    await sleep(SETTLE_MS);
    const afterRestart = broker.memory();
    await expectTenant(broker.endpoint, tenants - 1);
    const sendAfterRestart = await sendOneAtATime(broker.endpoint);
    return {
      tenants,
      createMs,
      createCpuMs,
      idle,
      withTenants,
      afterRestart,
      sendNone,
      sendWithTenants,
      sendAfterRestart,
      baselineStartup,
      tenantsStartup,
    };
  } finally {
    await broker.kill9();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const tenantName = (index: number) => `tenant-${index}`;

/** Each tenant's topic, then its group, over the admin API; progress on stderr every tenth. */
async function createTenants(
  broker: KillableBroker,
  tenants: number,
): Promise<{ createMs: number; createCpuMs: number }> {
  const startedAt = performance.now();
  const cpuAtStart = broker.cpuTimeMs();
  const tenth = Math.max(1, Math.floor(tenants / 10));
  let created = 0;
  await runPool(tenants, CREATE_IN_FLIGHT, async (index) => {
    await putTopic(broker.endpoint, tenantName(index), { type: 'normal' });
    await putGroup(broker.endpoint, tenantName(index), {});
    created++;
    if (created % tenth === 0)
      console.error(`  ${created} tenants in ${((performance.now() - startedAt) / 1_000).toFixed(1)} s`);
  });
  return { createMs: performance.now() - startedAt, createCpuMs: broker.cpuTimeMs() - cpuAtStart };
}

/** A tenant's topic and group as the admin API describes them; throws when either is missing. */
async function expectTenant(endpoint: string, index: number): Promise<void> {
  const base = endpoint.replace(/^ws/, 'http');
  for (const kind of ['topics', 'groups']) {
    const response = await fetch(`${base}/v1/${kind}/${tenantName(index)}`);
    if (!response.ok) throw new Error(`${kind} ${tenantName(index)} after the restart: ${response.status}`);
  }
}

/** The latency of {@link MANY_TENANTS_SENDS} sends, each awaited before the next. */
async function sendOneAtATime(endpoint: string): Promise<LatencySummary> {
  const producer = new Producer({ endpoint });
  await producer.start();
  try {
    for (let i = 0; i < SEND_WARM_UP; i++) await producer.send({ topic: SEND_TOPIC, body: BODY });
    const latenciesMs: number[] = [];
    for (let i = 0; i < MANY_TENANTS_SENDS; i++) {
      const sentAt = performance.now();
      await producer.send({ topic: SEND_TOPIC, body: BODY });
      latenciesMs.push(performance.now() - sentAt);
    }
    return summarize(latenciesMs);
  } finally {
    await producer.close();
  }
}
