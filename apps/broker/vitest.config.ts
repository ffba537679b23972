import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

export default defineProject({
  ...sourceResolution,
  test: {
    name: 'broker',
    // Many of these tests open a store and start a broker, which a machine busy with the rest of
    // the suite (two files at a time, and whatever else runs) can stretch past vitest's 5 s
    // default; the contract tests, which do the same, have 20 s.
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
