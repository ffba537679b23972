import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

export default defineProject({
  ...sourceResolution,
  test: {
    name: 'contract',
    include: ['src/**/*.contract.test.ts'],
    // Brokers sharing one PostgreSQL store: only in the contract-postgres project (vitest.postgres.config.ts).
    exclude: ['src/**/postgres-*.contract.test.ts'],
    // Each file starts its own brokers on port 0 with its own data directory.
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
