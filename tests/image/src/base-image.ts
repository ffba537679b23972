import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, run } from './commands.js';
import type { DockerDaemon } from './docker-daemon.js';

/** The Debian release the base is made of: the one `node:22-bookworm-slim` is made of. */
const DEBIAN_SUITE = 'bookworm';

/**
 * A tarball of a minimal Debian (`debootstrap --variant=minbase`), from the cache or made now by
 * `debian-base.sh`, which waits for a run already making it (`.ci/run` starts one early).
 * @returns its path, and how long this call took.
 */
export async function debianTarball(): Promise<{ path: string; elapsedMs: number }> {
  const made = await run(join(REPO_ROOT, 'tests', 'image', 'debian-base.sh'), [DEBIAN_SUITE], {
    budgetMs: 480_000,
  });
  return { path: made.stdout.trim(), elapsedMs: made.elapsedMs };
}

/**
 * The base `pnpm image` builds on here, in place of `node:22-bookworm-slim` (no image registry is
 * reachable): the Debian tarball imported as an image, and `node` copied into it. @returns its tag.
 */
export async function buildBaseImage(
  daemon: DockerDaemon,
  debian: string,
  node: string,
  nodeVersion: string,
): Promise<string> {
  const debianTag = `ricochet-test-debian:${DEBIAN_SUITE}`;
  await daemon.docker(['import', debian, debianTag], 300_000);
  const context = mkdtempSync(join(tmpdir(), 'ricochet-base-image-'));
  try {
    copyFileSync(node, join(context, 'node'));
    writeFileSync(join(context, 'Dockerfile'), `FROM ${debianTag}\nCOPY node /usr/local/bin/node\n`);
    const tag = `ricochet-test-node:${nodeVersion}`;
    await daemon.docker(['build', '--network', 'none', '--tag', tag, context], 300_000);
    return tag;
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}
