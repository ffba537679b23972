import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      'packages/*',
      'apps/*',
      'tests/*',
      'tests/contract/vitest.postgres.config.ts',
      // Queues spread over three brokers; covers one broker owning 4 queues (postgres-queues, run by hand) but for that broker alone.
      'tests/contract/vitest.postgres-spread.config.ts',
      // Brokers and PostgreSQL in network namespaces, cut apart for real (needs root; never skipped).
      'tests/contract/vitest.partition.config.ts',
      'examples/testing',
    ],
    // The JSON report is what `.ci/run` counts; the default reporter is for people.
    reporters: ['default', ['json', { outputFile: '.test-results/vitest.json' }]],
  },
});
