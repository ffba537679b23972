import { OutputTail } from './output-tail.js';
import type { ServerIdentity } from './server-identity.js';
import { spawnTied } from './tied-spawn.js';

/** What {@link runToEnd} needs besides the program and its arguments. */
export interface RunToEndOptions {
  /** The program's name in log lines and in the error, e.g. `initdb`. */
  readonly name: string;
  /** Where the program runs, a folder `identity` can enter. */
  readonly cwd: string;
  readonly identity: ServerIdentity | undefined;
  readonly log: ((line: string) => void) | undefined;
}

/**
 * Run one of PostgreSQL's setup programs (initdb, pg_basebackup) to its end, tied to this process
 * as the server is, each output line to `log`.
 *
 * @throws Error with the program's arguments and last output lines when it fails.
 */
export async function runToEnd(
  program: string,
  args: readonly string[],
  options: RunToEndOptions,
): Promise<void> {
  const child = spawnTied(program, args, { cwd: options.cwd, identity: options.identity });
  const output = new OutputTail(options.log);
  output.follow(child.stdout, `${options.name}: `);
  output.follow(child.stderr, `${options.name}: `);
  const result = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolve, reject) => {
      child.once('error', reject);
      // 'close', not 'exit': the last output lines are read by then.
      child.once('close', (code, signal) => resolve({ code, signal }));
    },
  );
  if (result.code !== 0) {
    throw new Error(
      `${options.name} failed (${result.signal ?? `exit code ${result.code}`}): ${args.join(' ')}\n${output.text()}`,
    );
  }
}
