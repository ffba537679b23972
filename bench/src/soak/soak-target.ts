import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newBenchDatabase } from '../bench-store.js';
import { type KillableBroker, startKillableBroker } from '../processes.js';
import type { DownInterval, StoredEntry } from './accounting.js';
import { readStoredLogs, readStoredLogsFromPostgres } from './store-read.js';

/** What `pnpm soak` kills: one broker on its data directory, or brokers sharing a PostgreSQL store. */
export interface SoakTarget {
  /** Where the clients connect: one endpoint, or every broker's. */
  readonly endpoints: readonly string[];
  /** Kill the broker that serves with -9 and bring the service back; resolves once it is back. */
  killServing(): Promise<DownInterval>;
  /** Kill every broker (the last SIGKILL), then read the topics' logs as the store holds them. */
  killAllAndRead(topics: readonly string[]): Promise<Map<string, StoredEntry[]>>;
  /**
   * Stop whatever runs and remove the data directories, unless `keep` (a failed run keeps its
   * evidence); resolves with where they are.
   */
  close(keep: boolean): Promise<string>;
}

const SERVING_BUDGET_MS = 120_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One broker on the embedded store, started again on the same port and data directory after each kill. */
export async function singleBrokerTarget(): Promise<SoakTarget> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-soak-'));
  let broker: KillableBroker = await startKillableBroker(dataDir);
  const { port } = broker;
  return {
    endpoints: [broker.endpoint],
    async killServing() {
      const fromMs = performance.now();
      await broker.kill9();
      broker = await startKillableBroker(dataDir, port);
      return { fromMs, toMs: performance.now() };
    },
    async killAllAndRead(topics) {
      await broker.kill9();
      return readStoredLogs(dataDir, topics);
    },
    async close(keep) {
      await broker.kill9();
      if (!keep) rmSync(dataDir, { recursive: true, force: true });
      return dataDir;
    },
  };
}

/**
 * Three brokers on one PostgreSQL database (DESIGN.md §9), with a short lease. Each kill takes the
 * owner down with -9; the service is back when a standby serves, and only then is the killed
 * broker started again (on its port and data directory), as a standby: started at once it would
 * take its own lease straight back (same identity) and no takeover would be tested.
 */
export async function postgresClusterTarget(leaseMs: number, storeQueues = 1): Promise<SoakTarget> {
  const url = await newBenchDatabase();
  // Active/standby, whatever the queues: the soak kills the one owner and a standby takes over.
  const args = [
    '--store',
    url,
    '--store-lease-ms',
    String(leaseMs),
    '--store-queues',
    String(storeQueues),
    '--no-store-spread',
  ];
  const dataDirs = [0, 1, 2].map(() => mkdtempSync(join(tmpdir(), 'ricochet-soak-')));
  const brokers: KillableBroker[] = [];
  for (const dataDir of dataDirs) brokers.push(await startKillableBroker(dataDir, 0, args));
  const ports = brokers.map((broker) => broker.port);
  const servingIndex = async (except: number) => {
    const deadline = performance.now() + SERVING_BUDGET_MS;
    // Bounded in time: a broker must serve within the budget.
    while (performance.now() < deadline) {
      const index = brokers.findIndex((broker, at) => at !== except && broker.serving());
      if (index >= 0) return index;
      await sleep(20);
    }
    throw new Error(`no broker served within ${SERVING_BUDGET_MS} ms`);
  };
  await servingIndex(-1);
  return {
    endpoints: brokers.map((broker) => broker.endpoint),
    async killServing() {
      const owner = await servingIndex(-1);
      const fromMs = performance.now();
      await brokers[owner]?.kill9();
      await servingIndex(owner);
      const toMs = performance.now();
      brokers[owner] = await startKillableBroker(dataDirs[owner] ?? '', ports[owner], args);
      return { fromMs, toMs };
    },
    async killAllAndRead(topics) {
      await Promise.all(brokers.map((broker) => broker.kill9()));
      return readStoredLogsFromPostgres(url, topics, storeQueues);
    },
    async close(keep) {
      await Promise.all(brokers.map((broker) => broker.kill9()));
      if (!keep) for (const dataDir of dataDirs) rmSync(dataDir, { recursive: true, force: true });
      // The database goes with the bench's PostgreSQL server; the brokers' directories hold its local copies.
      return dataDirs.join(', ');
    },
  };
}
