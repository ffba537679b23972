import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

export default defineProject({
  ...sourceResolution,
  test: {
    name: 'dashboard-e2e',
    include: ['src/**/*.e2e.test.ts'],
    // Builds the dashboard's bundle once before the tests, so `pnpm test` never serves a stale one.
    globalSetup: ['./src/build-bundle.global-setup.ts'],
    // A real Chromium, a real broker and real clients on a loaded 2-core machine: generous budgets.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
