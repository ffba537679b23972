import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** How a command ended, and what it printed. */
export interface CommandRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly elapsedMs: number;
}

/**
 * Run `command args` to its end, killed after `budgetMs`; rejects, with what it printed, unless it
 * exits 0 (`allowFailure` resolves whatever the exit). The test's NODE_OPTIONS (vitest's loaders)
 * never reach it.
 */
export async function run(
  command: string,
  args: readonly string[],
  options: {
    readonly budgetMs: number;
    readonly cwd?: string;
    readonly env?: NodeJS.ProcessEnv;
    readonly allowFailure?: boolean;
  },
): Promise<CommandRun> {
  const { NODE_OPTIONS: _ignored, ...inherited } = process.env;
  const startedAt = performance.now();
  const child = spawn(command, args, {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...inherited, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { code, stdout, stderr } = await collect(child, options.budgetMs);
  const result = { code, stdout, stderr, elapsedMs: Math.round(performance.now() - startedAt) };
  if (code !== 0 && !options.allowFailure) {
    throw new Error(`${command} ${args.join(' ')} exited with ${code}\n${stdout}\n${stderr}`.trim());
  }
  return result;
}

function collect(child: ChildProcess, budgetMs: number) {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const killer = setTimeout(() => {
    stderr += `\n[killed after ${budgetMs} ms]`;
    child.kill('SIGKILL');
  }, budgetMs);
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolvePromise, reject) => {
    child.once('error', (error) => {
      clearTimeout(killer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(killer);
      resolvePromise({ code, stdout, stderr });
    });
  });
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
