import { fileURLToPath } from 'node:url';

/** The dashboard package, whose `dist/` the broker serves when run from this repository. */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../../apps/dashboard/', import.meta.url));
export const DASHBOARD_DIST = fileURLToPath(new URL('../../../apps/dashboard/dist/', import.meta.url));
