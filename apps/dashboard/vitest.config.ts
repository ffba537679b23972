import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

/** The dashboard's pure logic (rates, retry timeline, body preview); the browser tests are in tests/dashboard-e2e. */
export default defineProject({
  ...sourceResolution,
  test: { name: 'dashboard', include: ['src/**/*.test.ts'] },
});
