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
    // Two files at a time, whatever the machine reports: vitest's default (cpus − 1) is one worker on
    // a two-core machine, and most of the suite's time is spent waiting on brokers, PostgreSQL and
    // timers, not computing. Every file starts its own brokers on port 0 with its own directories,
    // so files share nothing; projects that must run alone say so (fileParallelism, groupOrder).
    maxWorkers: 2,
    // The JSON report is what `.ci/run` counts; the default reporter is for people.
    reporters: ['default', ['json', { outputFile: '.test-results/vitest.json' }]],
  },
});
