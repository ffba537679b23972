import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';

const STOP_TIMEOUT_MS = 20_000;

/**
 * Process groups started and not yet stopped. A server runs detached, out of the terminal's reach:
 * should the bench end without stopping it (an uncaught error, Ctrl-C), the exit hook kills these
 * and removes their data dirs.
 */
const liveGroups = new Map<number, string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  const killAll = () => {
    for (const [pgid, dataDir] of liveGroups) {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // Gone already.
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
    liveGroups.clear();
  };
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAll();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  }
}

/** A peer's server process, in a process group of its own, stopped by this handle. */
export interface ServerProcess extends AsyncDisposable {
  readonly child: ChildProcess;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Spawn `command` as the leader of a new process group and wait until its output matches `ready`
 * (bounded by `readyTimeoutMs`). `stop()` sends SIGTERM to the whole group, SIGKILL after 20 s, waits
 * for the leader to exit, then removes `dataDir`: no helper process it spawned outlives it.
 */
export async function startServerProcess(
  command: string,
  args: readonly string[],
  options: {
    readonly env?: NodeJS.ProcessEnv;
    readonly cwd?: string;
    readonly ready: RegExp;
    readonly readyTimeoutMs: number;
    readonly dataDir: string;
  },
): Promise<ServerProcess> {
  const child = spawn(command, args, {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: options.cwd,
    env: options.env ?? process.env,
  });
  installExitHook();
  const pgid = child.pid;
  if (pgid !== undefined) liveGroups.set(pgid, options.dataDir);
  let output = '';
  const append = (chunk: Buffer) => {
    // Only the start-up banner matters; keep the tail so a long-running server holds little.
    output = (output + chunk.toString()).slice(-64_000);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else {
      child.once('exit', () => resolve());
      child.once('error', () => resolve()); // never spawned: no exit will come
    }
  });
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // The group is gone already.
    }
  };
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      signalGroup('SIGTERM');
      const killTimer = setTimeout(() => signalGroup('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(killTimer);
      // Anything of the group still there (a helper the leader did not wait for) goes too.
      signalGroup('SIGKILL');
      if (pgid !== undefined) liveGroups.delete(pgid);
      rmSync(options.dataDir, { recursive: true, force: true });
    })();
    return stopped;
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`${command} not ready in ${options.readyTimeoutMs} ms: ${output.slice(-500)}`)),
        options.readyTimeoutMs,
      );
      const check = () => {
        if (!options.ready.test(output)) return;
        clearTimeout(timer);
        resolve();
      };
      child.stdout?.on('data', check);
      child.stderr?.on('data', check);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${command} exited (${code ?? signal}) before it was ready: ${output.slice(-500)}`));
      });
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { child, output: () => output, stop, [Symbol.asyncDispose]: stop };
}
