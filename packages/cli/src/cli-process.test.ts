import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliTestBroker, cli, startCliTestBroker } from './cli-run.fixture.js';
import { EXIT_CODES } from './exit-codes.js';

/** The bin's source, run as `ricochet` would be: a real Node process, through tsx, on the sources. */
const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

/** Run the bin in a child process with `stdin` piped in, killed after `budgetMs`. */
function runBin(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  stdin: string,
  budgetMs = 20_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const {
    NODE_OPTIONS: _ignored,
    RICOCHET_ENDPOINT: _endpoint,
    RICOCHET_TOKEN: _token,
    ...inherited
  } = process.env;
  const child = spawn(process.execPath, ['--conditions=@ricochet/source', '--import', 'tsx', MAIN, ...args], {
    env: { ...inherited, ...env },
    // `--import tsx` resolves from here: this package has tsx, the repository's root does not.
    cwd: PACKAGE_DIR,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end(stdin);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), budgetMs);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let broker: CliTestBroker;
beforeAll(async () => {
  broker = await startCliTestBroker();
});
afterAll(() => broker[Symbol.asyncDispose]());

describe('the ricochet bin', () => {
  // One child process only (it compiles the sources through tsx, seconds on a loaded machine); the
  // other tests run the same commands in process.
  it('runs as a process: sends the body piped to it and exits 0', async () => {
    const sent = await runBin(
      ['send', 'smoke', '--tag', 'piped'],
      { RICOCHET_ENDPOINT: broker.webSocketUrl },
      'hi',
    );
    expect(sent).toMatchObject({ code: EXIT_CODES.OK, stderr: '' });
    const [, messageId] = /^sent (\S+) to smoke at offset 0\n$/.exec(sent.stdout) ?? [];
    const view = JSON.parse(
      (await cli(['messages', 'get', messageId ?? '', '--json', '--endpoint', broker.httpUrl])).stdout,
    );
    expect(view.message).toMatchObject({ tag: 'piped', bodyBase64: Buffer.from('hi').toString('base64') });
  }, 40_000);

  it('says the broker is unreachable and exits 5, whatever the command', async () => {
    const port = await closedPort();
    for (const argv of [
      ['groups', 'ls'],
      ['stats'],
      ['send', 'orders', '--body', 'x'],
      ['tail', 'orders'],
      ['dlq', 'ls', 'g'],
    ]) {
      const run = await cli([...argv, '--endpoint', `ws://127.0.0.1:${port}`]);
      expect({ argv, code: run.code }).toEqual({ argv, code: EXIT_CODES.UNAVAILABLE });
      expect(run.stderr).toContain(
        `error: cannot reach the broker at http://127.0.0.1:${port}: ECONNREFUSED`,
      );
      expect(run.stderr).toContain(
        `hint: is ricochet-broker running at ws://127.0.0.1:${port}? Set --endpoint`,
      );
    }
  });
});
