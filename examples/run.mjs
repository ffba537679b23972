// Runs one example of this folder: `pnpm example <name>` (the root script builds the clients first).
import { readdirSync } from 'node:fs';

const here = new URL('.', import.meta.url);
const examples = readdirSync(here)
  .filter((file) => file.endsWith('.mjs') && file !== 'run.mjs')
  .map((file) => file.slice(0, -'.mjs'.length))
  .sort();

const name = process.argv[2]?.replace(/\.mjs$/, '');
if (name === undefined || !examples.includes(name)) {
  console.error(name === undefined ? 'Which example?' : `There is no example '${name}'.`);
  console.error(`Usage: pnpm example <name>, one of:\n${examples.map((e) => `  ${e}`).join('\n')}`);
  process.exit(2);
}

// Every example talks to a running broker; say so plainly rather than let it time out.
const endpoint = process.env.RICOCHET_ENDPOINT ?? 'ws://127.0.0.1:7720';
const health = await fetch(`${endpoint.replace(/^ws/, 'http')}/healthz`, {
  signal: AbortSignal.timeout(5_000),
}).catch(() => undefined);
if (!health?.ok) {
  console.error(`No broker answers at ${endpoint}. Start one in another shell with \`pnpm start\`,`);
  console.error('or point RICOCHET_ENDPOINT at yours (e.g. ws://127.0.0.1:7720).');
  process.exit(1);
}

await import(new URL(`${name}.mjs`, here).href);
