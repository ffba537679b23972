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

function collect(stream: NodeJS.ReadableStream): {
  text: () => string;
  line: Promise<string>;
  /** The first line that matches `pattern`, once printed. */
  lineMatching: (pattern: RegExp) => Promise<string>;
} {
  let text = '';
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const settle = () => {
    const lines = text.split('\n').slice(0, -1);
    for (const waiter of [...waiters]) {
      const found = lines.find((candidate) => waiter.pattern.test(candidate));
      if (found === undefined) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(found);
    }
  };
  const lineMatching = (pattern: RegExp) =>
    new Promise<string>((resolve) => {
      waiters.push({ pattern, resolve });
      settle();
    });
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    settle();
  });
  return { text: () => text, line: lineMatching(/^/), lineMatching };
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
    'logs JSON through a pipe at info: state changes and the start line, no line per HTTP request',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-cli-'));
      // The defaults: no level, no format given (stdout is a pipe, so JSON).
      const child = startCli(['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], {
        RICOCHET_LOG_LEVEL: '',
        RICOCHET_LOG_FORMAT: '',
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        const stdout = collect(child.stdout);
        const line = await stdout.lineMatching(/listening on/);
        const port = /listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(line)?.[1];
        for (const path of ['/healthz', '/metrics', '/v1/topics', '/no-such-route']) {
          await (await fetch(`http://127.0.0.1:${port}${path}`)).text();
        }
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
        const records = stdout
          .text()
          .trim()
          .split('\n')
          .map((text) => JSON.parse(text) as { level: number; msg: string; endpoints?: string[] });
        const starts = records.filter((record) =>
          record.msg.startsWith('ricochet-broker listening on ws://'),
        );
        expect(starts).toHaveLength(1);
        expect(starts[0]).toMatchObject({ level: 30, endpoints: [`ws://127.0.0.1:${port}`] });
        expect(starts[0]?.msg).toBe(
          `ricochet-broker listening on ws://127.0.0.1:${port} (data in ${dataDir})`,
        );
        expect(records.map((record) => record.msg)).toContain('store opened');
        expect(records.filter((record) => /request|listening at|not found/i.test(record.msg))).toEqual([]);
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
