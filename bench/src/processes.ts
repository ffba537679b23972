import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A process the bench started; stopped by its own handle. */
export interface BenchProcess extends AsyncDisposable {
  readonly child: ChildProcess;
  /** What the process printed to announce itself (the URL or port line). */
  readonly banner: string;
  /** Resident set size now, in bytes (Linux /proc). */
  rssBytes(): number;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);
const BROKER_MAIN = join(dirname(require.resolve('@ricochet/broker/package.json')), 'src', 'main.ts');
const REFERENCE_MAIN = join(dirname(fileURLToPath(import.meta.url)), 'reference-server.ts');

async function start(
  script: string,
  args: string[],
  ready: RegExp,
  cleanup: () => void = () => {},
): Promise<BenchProcess> {
  const child = spawn(
    process.execPath,
    ['--conditions=@ricochet/source', '--import', 'tsx', script, ...args],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      cwd: dirname(script),
      env: { ...process.env, RICOCHET_LOG_LEVEL: 'warn' },
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const banner = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = ready.exec(output);
      if (match) resolve(match[0]);
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}: ${output}`)));
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    cleanup();
  };
  return {
    child,
    banner,
    rssBytes() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
      return kb * 1024;
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** The Ricochet broker from source, on a fresh data directory, with the default `fsync` flush policy. */
export async function startBrokerProcess(
  extraArgs: string[] = [],
): Promise<BenchProcess & { readonly endpoint: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-bench-'));
  const process_ = await start(
    BROKER_MAIN,
    ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...extraArgs],
    /ws:\/\/127\.0\.0\.1:\d+/,
    () => rmSync(dataDir, { recursive: true, force: true }),
  );
  return Object.assign(process_, { endpoint: process_.banner });
}

/** The bare ws + msgpackr reference server. */
export async function startReferenceProcess(): Promise<BenchProcess & { readonly url: string }> {
  const process_ = await start(REFERENCE_MAIN, [], /listening on (\d+)/);
  const port = /\d+/.exec(process_.banner)?.[0];
  return Object.assign(process_, { url: `ws://127.0.0.1:${port}` });
}
