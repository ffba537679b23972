import { existsSync } from 'node:fs';
import { build } from 'vite';
import { CHROMIUM_PATH } from './chromium.js';
import { DASHBOARD_DIR } from './paths.js';

/**
 * Build the dashboard's bundle into apps/dashboard/dist (what the broker serves from source), and
 * fail at once, with what to do, when Chromium is missing: these tests never skip.
 */
export default async function setup(): Promise<void> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `the dashboard's browser tests need Chromium at ${CHROMIUM_PATH}: install Debian's package ` +
        '(`apt-get install -y chromium`, which .ci/run does when it runs as root) or set CHROMIUM_PATH',
    );
  }
  await build({ root: DASHBOARD_DIR, logLevel: 'warn' });
}
