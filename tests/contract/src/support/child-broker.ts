import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type NodeRun, runNode } from './node-process.js';

/** A broker in a child process, to be killed for real (`kill -9`) by crash tests. */
export interface ChildBroker extends AsyncDisposable {
  readonly endpoint: string;
  readonly process: ChildProcess;
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
  const endpoint = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (ws:\/\/\S+)/.exec(output);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`broker exited with ${code} before listening: ${output}`)));
  });
  const kill9 = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return { endpoint, process: child, kill9, [Symbol.asyncDispose]: kill9 };
}

/** Run `ricochet-broker <args>` (e.g. `backup …`) to its end, as an operator would, killed after `budgetMs`. */
export function runBrokerCli(args: readonly string[], budgetMs: number): Promise<NodeRun> {
  return runNode(['--conditions=@ricochet/source', '--import', 'tsx', BROKER_MAIN, ...args], {
    cwd: dirname(BROKER_MAIN),
    budgetMs,
  });
}
