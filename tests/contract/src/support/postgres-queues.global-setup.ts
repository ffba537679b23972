import { startPostgres } from '@ricochet/postgres-testkit';
import type { TestProject } from 'vitest/node';

/** Queues per store in the `contract-postgres-queues` run: enough that a test's few messages spread. */
const STORE_QUEUES = 4;

/** As `postgres.global-setup.ts`, and every broker splits its store into {@link STORE_QUEUES} queues. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres();
  project.provide('postgresServerUrl', server.url);
  project.provide('postgresStoreQueues', STORE_QUEUES);
  return () => server.stop();
}
