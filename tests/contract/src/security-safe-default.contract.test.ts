import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BrokerStartError, buildBroker } from '@ricochet/broker';
import { afterEach, describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { runNode } from './support/node-process.js';
import { AuthFileFixture, adminRequest } from './support/security.js';
import { startBroker } from './support/test-broker.js';

const require = createRequire(import.meta.url);
const BROKER_MAIN = join(dirname(require.resolve('@ricochet/broker/package.json')), 'src', 'main.ts');

/** `ricochet-broker <args>` as a process, through tsx on the in-repo source. */
function runBrokerCli(args: readonly string[]) {
  return runNode(['--conditions=@ricochet/source', '--import', 'tsx', BROKER_MAIN, ...args], {
    cwd: dirname(BROKER_MAIN),
    env: { RICOCHET_LOG_LEVEL: 'warn' },
    budgetMs: 30_000,
  });
}

const directories: string[] = [];
function tempDir(): string {
  const directory = mkdtempSync(join(tmpdir(), 'ricochet-safe-default-'));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('safe by default: no authentication, loopback only (DESIGN.md §7)', () => {
  it('refuses a non-loopback host without an auth file, before creating anything', async () => {
    const dataDir = join(tempDir(), 'data');
    for (const host of ['0.0.0.0', '::', '192.0.2.10']) {
      const refused = buildBroker({ host, port: 0, dataDir, logLevel: 'silent' });
      await expect(refused).rejects.toBeInstanceOf(BrokerStartError);
      await expect(refused).rejects.toThrow(/--allow-unauthenticated/);
    }
    expect(existsSync(dataDir)).toBe(false);
  });

  it('builds on a non-loopback host with an auth file, or when told --allow-unauthenticated', async () => {
    using auth = new AuthFileFixture({ ops: { admin: 'write' } });
    // Built, not listening: the test binds nothing but loopback.
    await (
      await buildBroker({ host: '0.0.0.0', dataDir: tempDir(), authFile: auth.path, logLevel: 'silent' })
    ).close();
    await (
      await buildBroker({
        host: '0.0.0.0',
        dataDir: tempDir(),
        allowUnauthenticated: true,
        logLevel: 'silent',
      })
    ).close();
  });

  it('says why on the command line, and exits 2', { timeout: 60_000 }, async () => {
    const run = await runBrokerCli([
      '--host',
      '0.0.0.0',
      '--port',
      '0',
      '--data-dir',
      join(tempDir(), 'data'),
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('refusing to listen on 0.0.0.0 without authentication');
    expect(run.stderr).toContain('--auth-file');
    expect(run.stdout).not.toContain('listening');
  });

  it('prints a token and an auth-file entry with `ricochet-broker token` that the broker then accepts', {
    timeout: 60_000,
  }, async () => {
    const run = await runBrokerCli(['token', '--name', 'cli-made']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    const token = lines[1] ?? '';
    expect(Buffer.from(token, 'base64url').byteLength).toBeGreaterThanOrEqual(16);
    const entry = JSON.parse(lines.at(-1) ?? '') as Record<string, unknown>;
    expect(entry).toMatchObject({ name: 'cli-made', tokenSha256: expect.stringMatching(/^[0-9a-f]{64}$/) });

    const authFile = join(tempDir(), 'auth.json');
    writeFileSync(authFile, JSON.stringify({ principals: [{ ...entry, publish: ['orders'] }] }));
    await using broker = await startBroker({ authFile });
    await using producer = await startProducer(broker.endpoint, { token });
    expect(await producer.send({ topic: 'orders', body: 'with a minted token' })).toMatchObject({
      offset: 0,
    });
  });

  it('keeps deprecated --auth-tokens working, now guarding the admin API too', async () => {
    await using broker = await startBroker({ authTokens: ['legacy-secret'] });
    await expect(startProducer(broker.endpoint)).rejects.toMatchObject({ code: 401 });
    await using producer = await startProducer(broker.endpoint, { token: 'legacy-secret' });
    await producer.send({ topic: 'orders', body: 'x' });
    expect((await adminRequest(broker.endpoint, 'GET', '/v1/topics/orders')).status).toBe(401);
    expect(
      (await adminRequest(broker.endpoint, 'GET', '/v1/topics/orders', { token: 'legacy-secret' })).status,
    ).toBe(200);
  });
});
