import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

// In this repository the workspace packages resolve to their TypeScript source; a project that
// installs @ricochet/testing from npm needs no config for it at all.
export default defineProject({
  ...sourceResolution,
  test: {
    name: 'testing-examples',
    include: ['vitest/**/*.test.ts'],
    // Each test starts a real broker; under load that takes a moment, the virtual time none.
    testTimeout: 20_000,
  },
});
