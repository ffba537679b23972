import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Broker, buildBroker } from '@ricochet/broker';
import { runCli } from './cli.js';
import type { CliIo, TextSink } from './cli-io.js';

/** A real broker on 127.0.0.1:0 over a temporary data directory, closed (and removed) by `await using`. */
export interface CliTestBroker extends AsyncDisposable {
  readonly broker: Broker;
  /** `ws://127.0.0.1:<port>`, what the clients take. */
  readonly webSocketUrl: string;
  /** `http://127.0.0.1:<port>`, what the CLI takes by default. */
  readonly httpUrl: string;
}

export async function startCliTestBroker(): Promise<CliTestBroker> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-cli-'));
  const broker = await buildBroker({ host: '127.0.0.1', port: 0, logLevel: 'silent', dataDir });
  const { url, port } = await broker.listen();
  return {
    broker,
    webSocketUrl: url,
    httpUrl: `http://127.0.0.1:${port}`,
    async [Symbol.asyncDispose]() {
      await broker.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A captured output stream; `isTTY` makes the CLI draw as it would on a terminal. */
export class CapturedSink implements TextSink {
  text = '';
  readonly isTTY: boolean;
  readonly columns = 80;
  readonly #waiters = new Set<{ pattern: RegExp; resolve: () => void }>();

  constructor(isTTY = false) {
    this.isTTY = isTTY;
  }

  write(text: string): boolean {
    this.text += text;
    for (const waiter of this.#waiters) {
      if (waiter.pattern.test(this.text)) {
        this.#waiters.delete(waiter);
        waiter.resolve();
      }
    }
    return true;
  }

  /** Resolves once the text written so far matches `pattern`. */
  until(pattern: RegExp): Promise<void> {
    if (pattern.test(this.text)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add({ pattern, resolve }));
  }
}

export interface CliRunOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly stdin?: string;
  readonly stdoutIsTTY?: boolean;
  readonly stderrIsTTY?: boolean;
  /** Stops `tail` and `stats` as Ctrl-C would. */
  readonly signal?: AbortSignal;
}

/** A CLI run in this process: its exit code and what it wrote. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Start `ricochet <argv>` in process; the sinks show its output while it runs. */
export function startCli(
  argv: readonly string[],
  options: CliRunOptions = {},
): { stdout: CapturedSink; stderr: CapturedSink; done: Promise<CliRun> } {
  const stdout = new CapturedSink(options.stdoutIsTTY);
  const stderr = new CapturedSink(options.stderrIsTTY);
  const body = options.stdin;
  const stdin: CliIo['stdin'] = {
    isTTY: body === undefined,
    async *[Symbol.asyncIterator]() {
      if (body !== undefined) yield Buffer.from(body);
    },
  };
  const io: CliIo = {
    stdout,
    stderr,
    stdin,
    env: options.env ?? {},
    signal: options.signal ?? new AbortController().signal,
  };
  const done = runCli(argv, io).then((code) => ({ code, stdout: stdout.text, stderr: stderr.text }));
  return { stdout, stderr, done };
}

/** Run `ricochet <argv>` in process to its end. */
export function cli(argv: readonly string[], options: CliRunOptions = {}): Promise<CliRun> {
  return startCli(argv, options).done;
}
