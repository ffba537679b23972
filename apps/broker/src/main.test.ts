import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SOURCE_DIR = dirname(fileURLToPath(import.meta.url));
/**
 * Each test starts Node with a TypeScript loader: about a second on an idle machine, several on a
 * busy CI one. Its own budget, far above either, so only a hang fails it.
 */
const CLI_BUDGET_MS = 30_000;
const MAIN = join(SOURCE_DIR, 'main.ts');

/** Run the CLI from source (tsx), as `ricochet-broker` would run from dist. */
function startCli(args: string[], env: Record<string, string> = {}) {
  return spawn(process.execPath, ['--conditions=@ricochet/source', '--import', 'tsx', MAIN, ...args], {
    // From the package directory, so `--import tsx` resolves the broker's own devDependency.
    cwd: dirname(SOURCE_DIR),
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RICOCHET_LOG_LEVEL: 'warn', ...env },
  });
}

function collect(stream: NodeJS.ReadableStream): { text: () => string; line: Promise<string> } {
  let text = '';
  let resolveLine: (line: string) => void = () => {};
  const line = new Promise<string>((resolve) => {
    resolveLine = resolve;
  });
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    const newline = text.indexOf('\n');
    if (newline >= 0) resolveLine(text.slice(0, newline));
  });
  return { text: () => text, line };
}

/** Write `bytes` to a TCP port and resolve with everything read until the peer ends the connection. */
function firstBytes(port: number, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(bytes));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => {
      socket.end();
      resolve(Buffer.concat(chunks));
    });
    socket.on('error', reject);
  });
}

describe('ricochet-broker CLI', () => {
  it(
    'prints one line with its URL, serves, and drains to exit 0 on SIGTERM',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-cli-'));
      const child = startCli(['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir]);
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        const stdout = collect(child.stdout);
        const line = await stdout.line;
        const url = /listening on (ws:\/\/127\.0\.0\.1:(\d+))/.exec(line);
        expect(url, line).not.toBeNull();
        const health = await fetch(`http://127.0.0.1:${url?.[2]}/healthz`);
        expect(await health.json()).toEqual({ status: 'ok' });
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
        expect(stdout.text().trim().split('\n')).toHaveLength(1);
      } finally {
        child.kill('SIGKILL');
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
    CLI_BUDGET_MS,
  );

  it(
    'names the TCP listener in the start line with RICOCHET_TCP_PORT, and serves frames there',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-cli-'));
      const child = startCli(['--port', '0', '--data-dir', dataDir], { RICOCHET_TCP_PORT: '0' });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        const line = await collect(child.stdout).line;
        const endpoints =
          /listening on ws:\/\/127\.0\.0\.1:(\d+), tcp:\/\/127\.0\.0\.1:(\d+) \(data in /.exec(line);
        expect(endpoints, line).not.toBeNull();
        expect(endpoints?.[2]).not.toBe(endpoints?.[1]);
        // The TCP port speaks Ricochet: a first frame that is not hello gets an error frame (a
        // length prefix first) and the close record.
        const answer = await firstBytes(Number(endpoints?.[2]), Buffer.from([0, 0, 0, 1, 0xc1]));
        expect(answer.readUInt32BE(0)).toBeGreaterThan(0);
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      } finally {
        child.kill('SIGKILL');
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
    CLI_BUDGET_MS,
  );

  it(
    'exits non-zero naming a bad flag',
    async () => {
      const child = startCli(['--port', 'eighty']);
      const stderr = collect(child.stderr);
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(2);
      expect(stderr.text()).toContain('--port');
    },
    CLI_BUDGET_MS,
  );
});
