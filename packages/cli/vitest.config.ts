import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

export default defineProject({
  ...sourceResolution,
  test: {
    name: 'cli',
    // Most files start a real broker on port 0 with its own data directory.
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
