import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

/**
 * Issue 33 item 2: the spread cluster under real network partitions (`src/partition/`): three
 * brokers and PostgreSQL in network namespaces of their own, cut apart and slowed down for real.
 * Needs root and `ip netns` (iproute2); without them it fails with the reason, it never skips.
 * One file, its cases in order on one cluster: a few minutes at most.
 */
export default defineProject({
  ...sourceResolution,
  test: {
    name: 'contract-partition',
    include: ['src/partition/**/*.partition.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
