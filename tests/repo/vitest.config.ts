import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

export default defineProject({
  ...sourceResolution,
  test: {
    name: 'repo',
    // Several checks read and parse every source file of the repository (the import graph, file
    // sizes): seconds of CPU, which a machine busy with the rest of the suite can stretch past
    // vitest's 5 s default. The budget is for a loaded machine, not the idle one.
    testTimeout: 60_000,
  },
});
