import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';
import { POSTGRES_CONTRACT_FILES } from './vitest.postgres.config.js';

/**
 * The PostgreSQL run of the rules again, every broker's store split into queues (`--store-queues`,
 * DESIGN.md §9): the rules must hold whichever queue a message is in. Run by hand (`npx vitest run
 * -c vitest.postgres-queues.config.ts`): CI runs `vitest.postgres-spread.config.ts` instead, the
 * same files with the queues spread over three brokers.
 */
export default defineProject({
  ...sourceResolution,
  test: {
    name: 'contract-postgres-queues',
    include: POSTGRES_CONTRACT_FILES.map((file) => `src/**/${file}.contract.test.ts`),
    globalSetup: ['./src/support/postgres-queues.global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
