// Copy the dashboard's build into dist/ui, so the published broker serves it at /ui with no other
// package to install. Turbo builds @ricochet/dashboard first (a devDependency of the broker); a
// build run on its own without the dashboard built warns and ships without it (/ui then explains).
import { cpSync, existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const from = fileURLToPath(new URL('../../dashboard/dist/', import.meta.url));
const to = fileURLToPath(new URL('../dist/ui/', import.meta.url));
rmSync(to, { recursive: true, force: true });
if (existsSync(`${from}index.html`)) {
  cpSync(from, to, { recursive: true });
} else {
  console.warn(
    `copy-ui: no dashboard build in ${from}; run \`pnpm --filter @ricochet/dashboard build\` first`,
  );
}
