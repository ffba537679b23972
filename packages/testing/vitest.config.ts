import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

export default defineProject({
  ...sourceResolution,
  test: {
    name: 'testing',
    // Each test starts a real broker (LMDB in a temporary directory) and real clients.
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
