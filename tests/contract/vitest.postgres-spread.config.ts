import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';
import { POSTGRES_CONTRACT_FILES } from './vitest.postgres.config.js';

/**
 * The PostgreSQL run of the rules with every store split into 4 queues spread over three brokers
 * (`--store-spread`, DESIGN.md §9): each test's clients connect to the three in turn, so a
 * producer and its consumers are on different brokers, and every request for a queue another
 * broker owns is forwarded; over WebSocket only (`support/transports.ts`). The standby files (`postgres-store-lease`, `postgres-cluster`) name
 * their store themselves and start their brokers without `--store-spread`: they run the
 * active/standby mode over 4 queues. The failover of spread queues (kill -9, SIGSTOP) is this
 * run's own file. In CI, in place of `vitest.postgres-queues.config.ts` (one broker owning 4
 * queues), which it covers but for a broker owning every queue of a split store with no peers.
 */
export default defineProject({
  ...sourceResolution,
  test: {
    name: 'contract-postgres-spread',
    include: [
      ...POSTGRES_CONTRACT_FILES.map((file) => `src/**/${file}.contract.test.ts`),
      'src/**/postgres-spread-failover.contract.test.ts',
      'src/**/postgres-spread-handover.contract.test.ts',
      'src/**/failure-storms-spread.contract.test.ts',
    ],
    globalSetup: ['./src/support/postgres-spread.global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
