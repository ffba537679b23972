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
/**
 * Files of the PostgreSQL run that are not run again with queues spread: a broker whose store URL
 * the test names itself (libpq's multi-host form, one broker); brokers on servers of the test's
 * own (a primary and its synchronous standby, failed over), spreading their queues already; and the retry rules of DESIGN.md
 * §12 that a single engine decides whatever its queue's owner (X1–X4, X6; X5, whose limit is
 * shared among a group's queues, and the readiness probe stay); and P3's order between a retry and
 * delay messages, which holds within one queue's ready lines only. What spreading changes, the
 * forwarding of requests and deliveries, the rules of §3 run here already.
 */
const NOT_SPREAD: ReadonlySet<string> = new Set([
  'postgres-multi-host-url',
  'postgres-sync-standby-failover',
  'x1-failure-classes',
  'x2-retry-budget',
  'x3-jitter',
  'x4-postpone',
  'x6-failure-record',
  // P3's order among a group's Ready messages is one queue's: spread, the delay messages and the
  // retry sit in queues of different owners, each serving its own line, so no order holds across.
  'p3-retry-before-first-deliveries',
]);

export default defineProject({
  ...sourceResolution,
  test: {
    name: 'contract-postgres-spread',
    include: [
      ...POSTGRES_CONTRACT_FILES.filter((file) => !NOT_SPREAD.has(file)).map(
        (file) => `src/**/${file}.contract.test.ts`,
      ),
      'src/**/postgres-spread-failover.contract.test.ts',
      'src/**/postgres-spread-handover.contract.test.ts',
      'src/**/postgres-spread-admin-writes.contract.test.ts',
      'src/**/postgres-spread-owner-routes.contract.test.ts',
      'src/**/postgres-spread-owned-subscriptions.contract.test.ts',
      'src/**/postgres-spread-owned-receives.contract.test.ts',
      'src/**/failure-storms-spread.contract.test.ts',
    ],
    globalSetup: ['./src/support/postgres-spread.global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
