import { startPostgres } from '@ricochet/postgres-testkit';
import type { TestProject } from 'vitest/node';

/** Queues per store in the `contract-postgres-spread` run, spread over three brokers. */
const STORE_QUEUES = 4;

/**
 * As `postgres-queues.global-setup.ts`, and every store's queues are spread over the brokers that
 * share it (`--store-spread`): `startBroker` starts two more brokers on each test's database.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres();
  project.provide('postgresServerUrl', server.url);
  project.provide('postgresStoreQueues', STORE_QUEUES);
  project.provide('postgresStoreSpread', true);
  return () => server.stop();
}
