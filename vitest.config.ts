import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      'packages/*',
      'apps/*',
      'tests/*',
      'tests/contract/vitest.postgres.config.ts',
      'tests/contract/vitest.postgres-queues.config.ts',
      'examples/testing',
    ],
    // The JSON report is what `.ci/run` counts; the default reporter is for people.
    reporters: ['default', ['json', { outputFile: '.test-results/vitest.json' }]],
  },
});
