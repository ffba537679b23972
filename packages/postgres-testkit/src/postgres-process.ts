import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { OutputTail } from './output-tail.js';
import { onProcessEnd } from './process-end-hooks.js';
import type { ServerIdentity } from './server-identity.js';
import { spawnTied } from './tied-spawn.js';

/** What {@link PostgresProcess.spawn} needs. */
export interface PostgresProcessOptions {
  readonly postgres: string;
  /** A cluster made by initdb. */
  readonly dataDir: string;
  /** Where the Unix socket and its lock file go, and the working directory; `identity` owns it. */
  readonly socketDir: string;
  readonly port: number;
  readonly identity: ServerIdentity | undefined;
  readonly log: ((line: string) => void) | undefined;
}

/** How long a fast shutdown (SIGINT) may take before the server is killed (SIGKILL). */
const STOP_GRACE_MS = 10_000;

/** How long after its exit the server's last output may still be in the pipe. */
const OUTPUT_DRAIN_MS = 1_000;

/** The server's log when another process holds its port (it then exits with FATAL). */
const PORT_TAKEN = /could not bind IPv4 address[^\n]*Address already in use/;

/**
 * The `postgres` server as a child process of this one, stopped through its own handle (never by
 * a process name, which could hit another test's server). It must not outlive this process: a
 * hook on this process's exit and ending signals SIGKILLs it if it still runs then (a test that
 * never stopped it), and where setpriv exists the kernel does the same when no hook can run.
 */
export class PostgresProcess {
  readonly #child: ChildProcess;
  readonly #output: OutputTail;
  /** Resolves once the process has exited, or never started; never rejects. */
  readonly #exited: Promise<void>;
  /** Resolves once stdout and stderr have ended. */
  readonly #outputEnded: Promise<void>;
  #hasExited = false;
  #exitDescription = 'running';
  #stopping: Promise<void> | undefined;

  private constructor(child: ChildProcess, output: OutputTail) {
    this.#child = child;
    this.#output = output;
    const removeEndHook = onProcessEnd(() => this.kill());
    this.#outputEnded = new Promise<void>((resolve) => child.once('close', () => resolve()));
    this.#exited = new Promise<void>((resolve) => {
      const settle = (description: string) => {
        if (this.#hasExited) return;
        this.#hasExited = true;
        this.#exitDescription = description;
        removeEndHook();
        resolve();
      };
      // 'exit', not 'close': after a SIGKILL, backends may hold stderr open a moment longer.
      child.once('exit', (code, signal) =>
        settle(signal ? `killed by ${signal}` : `exited with code ${code}`),
      );
      child.once('error', (error) => settle(`could not run: ${error.message}`));
    });
  }

  /** Start the server on `127.0.0.1:port`; {@link whenExited} tells if it fails to come up. */
  static spawn(options: PostgresProcessOptions): PostgresProcess {
    const args = [
      ...['-D', options.dataDir, '-h', '127.0.0.1', '-p', String(options.port), '-k', options.socketDir],
      // fsync stays on: the tests that use this server check that committed writes are durable.
      ...['-c', 'fsync=on', '-c', 'max_connections=200', '-c', 'shared_buffers=64MB'],
    ];
    const child = spawnTied(options.postgres, args, { cwd: options.socketDir, identity: options.identity });
    const output = new OutputTail(options.log);
    output.follow(child.stdout, 'postgres: ');
    output.follow(child.stderr, 'postgres: ');
    return new PostgresProcess(child, output);
  }

  /** Whether the process has exited (or never started). */
  get hasExited(): boolean {
    return this.#hasExited;
  }

  /** Resolves once the server has exited (or could not be run at all); never rejects. */
  whenExited(): Promise<void> {
    return this.#exited;
  }

  /**
   * After it exited: how, with its last log lines, and whether it exited because another process
   * took its port first. Waits for the log's last lines, which may arrive after the exit.
   */
  async exitReport(): Promise<{ readonly lostPort: boolean; readonly description: string }> {
    await this.#exited;
    await Promise.race([this.#outputEnded, sleep(OUTPUT_DRAIN_MS, undefined, { ref: false })]);
    const output = this.#output.text();
    return {
      lostPort: PORT_TAKEN.test(output),
      description: `${this.#exitDescription}; its last output:\n${output}`,
    };
  }

  /** SIGKILL now, if still running; for exit hooks, which cannot wait. Backends follow on their own. */
  kill(): void {
    if (!this.#hasExited) this.#child.kill('SIGKILL');
  }

  /**
   * Fast shutdown (SIGINT: open transactions roll back, then a checkpoint), SIGKILL after
   * {@link STOP_GRACE_MS}; resolves once the process has exited. Idempotent.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    if (this.#hasExited) return;
    this.#child.kill('SIGINT');
    const killer = setTimeout(() => this.#child.kill('SIGKILL'), STOP_GRACE_MS);
    try {
      await this.#exited;
    } finally {
      clearTimeout(killer);
    }
  }
}
