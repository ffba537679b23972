import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach } from 'vitest';

/** How a `node` child process ended, and what it printed. */
export interface NodeRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly elapsedMs: number;
}

/** Children still running, each stopped by its own handle after every test, passed or failed. */
const running = new Set<ChildProcess>();

afterEach(async () => {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once('close', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
  running.clear();
});

/**
 * Run `node <args>` in `cwd` with `env` added, killed after `budgetMs`. NODE_OPTIONS from the test's
 * own environment does not reach the child: the checks are of plain Node.
 */
export function runNode(
  args: readonly string[],
  options: { readonly cwd: string; readonly env?: NodeJS.ProcessEnv; readonly budgetMs: number },
): Promise<NodeRun> {
  const startedAt = performance.now();
  const { NODE_OPTIONS: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { ...inherited, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const killer = setTimeout(() => {
    stderr += `\n[killed after ${options.budgetMs} ms]`;
    child.kill('SIGKILL');
  }, options.budgetMs);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(killer);
      running.delete(child);
      resolve({ code, signal, stdout, stderr, elapsedMs: Math.round(performance.now() - startedAt) });
    });
  });
}

/**
 * Syntax that `node --check` accepts on a Node newer than 20.19 (Node 24 has `using`), listed so
 * the check holds whatever Node runs the tests.
 */
export const NEWER_SYNTAX: readonly { readonly name: string; readonly pattern: RegExp }[] = [
  { name: '`using` / `await using` declarations', pattern: /^\s*(?:await\s+)?using\s+[\w$[{]/m },
  { name: 'decorators', pattern: /^\s*@[\w$]/m },
];
