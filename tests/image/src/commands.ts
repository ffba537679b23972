import { existsSync } from 'node:fs';
import { type CommandRun, REPO_ROOT, run as runCommand } from '@ricochet/release-checks';

export { REPO_ROOT };

/**
 * Run `command args` to its end, in the repository's root unless told, killed after `budgetMs`
 * (the release checks' runner: rejects with what it printed unless it exits 0). @returns what it
 * printed, and how long it took.
 */
export async function run(
  command: string,
  args: readonly string[],
  options: { readonly budgetMs: number; readonly cwd?: string; readonly env?: NodeJS.ProcessEnv },
): Promise<CommandRun & { readonly elapsedMs: number }> {
  const startedAt = performance.now();
  const result = await runCommand(command, args, { ...options, cwd: options.cwd ?? REPO_ROOT });
  return { ...result, elapsedMs: Math.round(performance.now() - startedAt) };
}

/**
 * The programs the image test needs, each from the Debian package `.ci/run` installs; a missing
 * one fails the test with what to install (it never skips).
 */
export function requiredPrograms(): { dockerd: string; docker: string; compose: string } {
  const programs = {
    // Debian's docker.io: the daemon, and the CLI of the same release, which builds with BuildKit
    // without the buildx plugin (a newer CLI elsewhere on PATH may not).
    dockerd: '/usr/sbin/dockerd',
    docker: '/usr/bin/docker',
    // Run by debian-base.sh.
    debootstrap: '/usr/sbin/debootstrap',
    compose: '/usr/bin/docker-compose',
  };
  const missing = Object.entries(programs).filter(([, path]) => !existsSync(path));
  if (missing.length > 0) {
    throw new Error(
      `the image test needs ${missing.map(([, path]) => path).join(', ')}: ` +
        'apt-get install -y docker.io debootstrap docker-compose (as .ci/run does)',
    );
  }
  if (process.getuid?.() !== 0)
    throw new Error('the image test runs dockerd and debootstrap, which need root');
  return { dockerd: programs.dockerd, docker: programs.docker, compose: programs.compose };
}
