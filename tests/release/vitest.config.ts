import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'release',
    // Building, packing and an npm install from the registry: minutes on a loaded machine, not seconds.
    hookTimeout: 600_000,
    testTimeout: 300_000,
    // After every other project: the build this runs rewrites apps/dashboard/dist, which the
    // dashboard's browser tests serve while they run.
    sequence: { groupOrder: 1 },
  },
});
