import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

export default defineProject({
  ...sourceResolution,
  test: {
    name: 'image',
    // A Debian base made with debootstrap on a fresh machine (about a minute), a Node.js package,
    // a build and several containers: minutes, not seconds.
    hookTimeout: 600_000,
    testTimeout: 120_000,
    // After the release checks (group 1): `pnpm image` runs a turbo build of the broker, which
    // rewrites the dist directories the browser tests serve and the release checks build too.
    sequence: { groupOrder: 2 },
  },
});
