import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type NodeRun, runNode } from './node-process.js';

/** A broker in a child process, to be killed for real (`kill -9`) by crash tests. */
export interface ChildBroker extends AsyncDisposable {
  readonly endpoint: string;
  readonly process: ChildProcess;
  /**
   * Resolves once the broker's stdout (its log included) has printed a line matching `pattern`
   * since it started; rejects after `budgetMs`. How a test learns that a signal was handled.
   */
  printed(pattern: RegExp, budgetMs?: number): Promise<void>;
  /** SIGKILL, then wait for the exit: no drain, no flush, no goodbye. */
  kill9(): Promise<void>;
}

const require = createRequire(import.meta.url);
/** The broker's CLI source, run through tsx with the in-repo source condition. */
const BROKER_MAIN = join(dirname(require.resolve('@ricochet/broker/package.json')), 'src', 'main.ts');

/**
 * Start `ricochet-broker --port 0 --data-dir <dir>` (plus `extraArgs`, e.g. `--auth-file`) and wait
 * for the line that names its URL.
 */
export async function startChildBroker(
  dataDir: string,
  extraArgs: readonly string[] = [],
): Promise<ChildBroker> {
  const child = spawn(
    process.execPath,
    [
      '--conditions=@ricochet/source',
      '--import',
      'tsx',
      BROKER_MAIN,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      dataDir,
      ...extraArgs,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, RICOCHET_LOG_LEVEL: 'warn' },
      cwd: dirname(BROKER_MAIN),
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const printed = (pattern: RegExp, budgetMs = 30_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!pattern.test(output)) return false;
        finish();
        resolve();
        return true;
      };
      const onExit = (code: number | null) => {
        finish();
        reject(new Error(`broker exited with ${code} before printing ${pattern}: ${output}`));
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`broker did not print ${pattern} within ${budgetMs} ms: ${output}`));
      }, budgetMs);
      const finish = () => {
        clearTimeout(timer);
        child.stdout?.off('data', check);
        child.off('exit', onExit);
      };
      if (check()) return;
      child.stdout?.on('data', check);
      child.once('exit', onExit);
    });
  // Generous: a tsx-compiled start on a loaded 2-core machine can take many seconds.
  await printed(/listening on ws:\/\/\S+/, 120_000);
  const endpoint = /listening on (ws:\/\/[^\s,]+)/.exec(output)?.[1] ?? '';
  const kill9 = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return { endpoint, process: child, printed, kill9, [Symbol.asyncDispose]: kill9 };
}

/** Run `ricochet-broker <args>` (e.g. `backup …`) to its end, as an operator would, killed after `budgetMs`. */
export function runBrokerCli(args: readonly string[], budgetMs: number): Promise<NodeRun> {
  return runNode(['--conditions=@ricochet/source', '--import', 'tsx', BROKER_MAIN, ...args], {
    cwd: dirname(BROKER_MAIN),
    budgetMs,
  });
}
