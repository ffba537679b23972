import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

export default defineProject({
  ...sourceResolution,
  test: {
    name: 'browser-e2e',
    include: ['src/**/*.e2e.test.ts'],
    // A Vite build, a real Chromium and a real broker on a loaded 2-core machine: generous budgets.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
