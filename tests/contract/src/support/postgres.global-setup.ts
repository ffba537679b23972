import { startPostgres } from '@ricochet/postgres-testkit';
import type { TestProject } from 'vitest/node';

/** One throwaway PostgreSQL server for the whole `contract-postgres` run, stopped by its handle at the end. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres();
  project.provide('postgresServerUrl', server.url);
  return () => server.stop();
}
