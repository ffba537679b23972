import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';
import { POSTGRES_CONTRACT_FILES } from './vitest.postgres.config.js';

/**
 * Files of the active/standby mode: a standby relaying to one owner of every queue, the lease of
 * a whole store. Queues spread over brokers have no standby (`--store-spread`).
 */
const STANDBY_FILES = new Set(['postgres-store-lease', 'postgres-cluster']);

/**
 * The PostgreSQL run of the rules with queues spread over three brokers (`--store-spread`,
 * DESIGN.md §9): each test's clients connect to the three in turn, so a producer and its consumers
 * are on different brokers, and every request for a queue another broker owns is forwarded.
 */
export default defineProject({
  ...sourceResolution,
  test: {
    name: 'contract-postgres-spread',
    include: POSTGRES_CONTRACT_FILES.filter((file) => !STANDBY_FILES.has(file)).map(
      (file) => `src/**/${file}.contract.test.ts`,
    ),
    globalSetup: ['./src/support/postgres-spread.global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
