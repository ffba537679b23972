import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

/**
 * The rules of DESIGN.md §3 again, each broker on a PostgreSQL database instead of the embedded
 * store (DESIGN.md §9): the same files, the same clients, a throwaway PostgreSQL server started by
 * the global setup. The files listed are those whose brokers go through `startBroker` or
 * `startChildBroker`, which pick the store (`support/test-store.ts`).
 */
export const POSTGRES_CONTRACT_FILES = [
  'p1-push-lifecycle',
  'p2-failure-and-timeouts',
  'p3-retry-delays',
  'p3-retries-survive-kill-9',
  'p4-max-retries-to-dlq',
  'p5-fifo-message-groups',
  'p6-delivery-attempt-and-id',
  's1-simple-lifecycle',
  's2-receive-leases-long-polling',
  's3-ack-while-lease-live',
  's4-change-invisible-duration',
  's5-max-retries-to-dlq',
  'r1-send-stored-durably',
  'r1-kill-9-durability',
  'r3-dedup-window',
  'r4-throttling',
  'r1-crash-with-commit-in-flight',
  'start-from-latest-at-start',
  'bad-input',
  'p3-retry-before-cached-messages',
  'p3-retry-before-first-deliveries',
  'store-watermarks',
  'admin-listings',
  't1-delay-messages',
  'd1-dead-letter-topic',
  'd2-dlq-redrive',
  'd3-dead-letter-now',
  // Retries beyond RocketMQ (DESIGN.md §12).
  'x1-failure-classes',
  'x2-retry-budget',
  'x3-jitter',
  'x4-postpone',
  'x6-failure-record',
  'b1-broadcasting',
  'c2-release-on-disconnect',
  'group-isolation',
  'retention',
  'readiness-probe',
  'x5-delivery-rate',
  'postgres-store-lease',
  'postgres-cluster',
  'postgres-multi-host-url',
  'postgres-sync-standby-failover',
  // Apache's RocketMQ clients on one broker of the cluster: with queues spread, the broker they
  // reach forwards what another owns, as for Ricochet's clients (DESIGN.md §10).
  'rocketmq-simple-consumer',
  'rocketmq-push-consumer',
];

export default defineProject({
  ...sourceResolution,
  test: {
    name: 'contract-postgres',
    include: [
      ...POSTGRES_CONTRACT_FILES.map((file) => `src/**/${file}.contract.test.ts`),
      // Not spread over brokers: there a broker streams the events of the queues it owns (X7).
      'src/**/x7-events.contract.test.ts',
    ],
    globalSetup: ['./src/support/postgres.global-setup.ts'],
    // Several broker processes per test on a loaded 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
