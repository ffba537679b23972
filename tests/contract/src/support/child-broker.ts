import type { ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { spawnTied } from '@ricochet/postgres-testkit';
import { type NodeRun, runNode } from './node-process.js';
import { storeFor, storeQueues, storeSpread } from './test-store.js';

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
  /** Resolves with the endpoint once the broker printed its listening line (at once if it has). */
  listening(budgetMs?: number): Promise<string>;
  /** Resolves with the process's exit code once it exited by itself (`null` if a signal ended it). */
  readonly exited: Promise<number | null>;
}

/** Options of {@link startChildBroker}. */
export interface StartChildBrokerOptions {
  /**
   * Resolve once the broker printed this instead of its listening line; {@link ChildBroker.listening}
   * then waits for that. `endpoint` is a standby's relay (the port it keeps), or empty. A standby waiting for the store prints
   * `waiting as a standby`. @default the listening line
   */
  readonly until?: RegExp;
  /**
   * Run the broker in this network namespace (`ip netns exec`), for the partition tests; give it
   * `--host` with the namespace's address in `extraArgs`. @default this process's namespace
   */
  readonly netns?: string;
}

const require = createRequire(import.meta.url);
/** The broker's CLI source, run through tsx with the in-repo source condition. */
const BROKER_MAIN = join(dirname(require.resolve('@ricochet/broker/package.json')), 'src', 'main.ts');

/**
 * Start `ricochet-broker --port 0 --data-dir <dir>` (plus `extraArgs`, e.g. `--auth-file`, and
 * `--store` in the `contract-postgres` project) and wait for the line that names its URL.
 */
export async function startChildBroker(
  dataDir: string,
  extraArgs: readonly string[] = [],
  options: StartChildBrokerOptions = {},
): Promise<ChildBroker> {
  // A test that names the store itself (brokers sharing one) keeps it.
  const { store } = extraArgs.includes('--store') ? { store: undefined } : await storeFor(dataDir);
  const child = spawnTiedToTest(
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
      ...(store === undefined
        ? []
        : ['--store', store, storeSpread() ? '--store-spread' : '--no-store-spread']),
      // Every broker of a run splits its store alike, also on a store the test names itself (a
      // PostgreSQL store is split into 8 queues unless told).
      ...((store !== undefined || extraArgs.includes('--store')) && !extraArgs.includes('--store-queues')
        ? ['--store-queues', String(storeQueues())]
        : []),
      ...extraArgs,
    ],
    { ...process.env, RICOCHET_LOG_LEVEL: 'warn' },
    options.netns,
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
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
  // Generous: a tsx-compiled start on a loaded 2-core machine can take many seconds. A broker that
  // never gets there is killed here, not left behind the failed test.
  try {
    await printed(options.until ?? /listening on ws:\/\/\S+/, 120_000);
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
    throw error;
  }
  // A broker on a shared store prints `standing by on <url>` first, on the port it keeps.
  const endpointPrinted = () =>
    /listening on (ws:\/\/[^\s,]+)/.exec(output)?.[1] ??
    /standing by on (ws:\/\/[\w.-]+:\d+)/.exec(output)?.[1] ??
    '';
  const endpoint = endpointPrinted();
  const listening = async (budgetMs?: number) => {
    await printed(/listening on ws:\/\/\S+/, budgetMs);
    return endpointPrinted();
  };
  const kill9 = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };

  return {
    endpoint,
    listening,
    process: child,
    printed,
    kill9,
    exited,
    [Symbol.asyncDispose]: async () => {
      await kill9();
    },
  };
}

/**
 * `node <args>` with the broker's directory as cwd, tied to this test process (the testkit's
 * `spawnTied`): the kernel kills it when the process that started it ends, so a test that times
 * out while a broker is starting (or a worker that is killed) leaves no broker running. Its stderr
 * goes to ours.
 */
function spawnTiedToTest(
  nodeArgs: readonly string[],
  env: NodeJS.ProcessEnv,
  netns: string | undefined,
): ChildProcess {
  // `ip netns exec` execs in place, then setpriv (in spawnTied) does: the pid stays the broker's.
  const [command, args] =
    netns === undefined
      ? [process.execPath, nodeArgs]
      : ['ip', ['netns', 'exec', netns, process.execPath, ...nodeArgs]];
  const child = spawnTied(command, args, {
    cwd: dirname(BROKER_MAIN),
    identity: undefined,
    env,
  });
  child.stderr.pipe(process.stderr);
  return child;
}

/** Run `ricochet-broker <args>` (e.g. `backup …`) to its end, as an operator would, killed after `budgetMs`. */
export function runBrokerCli(args: readonly string[], budgetMs: number): Promise<NodeRun> {
  return runNode(['--conditions=@ricochet/source', '--import', 'tsx', BROKER_MAIN, ...args], {
    cwd: dirname(BROKER_MAIN),
    budgetMs,
  });
}
