import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BrokerStartError, loadStartupAuth } from './startup-auth.js';

const directory = mkdtempSync(join(tmpdir(), 'ricochet-startup-auth-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const base = { authTokens: [] as string[], host: '127.0.0.1', allowUnauthenticated: false };

describe('loadStartupAuth', () => {
  it('runs without authentication on loopback, and with none configured', async () => {
    expect(await loadStartupAuth(base)).toEqual({ authFile: undefined, warnings: [] });
  });

  it('reads the auth file, and refuses a bad one with its problem', async () => {
    const good = join(directory, 'good.json');
    writeFileSync(
      good,
      JSON.stringify({ principals: [{ name: 'ops', tokenSha256: 'a'.repeat(64), admin: 'read' }] }),
    );
    const loaded = await loadStartupAuth({ ...base, host: '0.0.0.0', authFile: good });
    expect(loaded.authFile?.principals.map((principal) => principal.name)).toEqual(['ops']);

    const bad = join(directory, 'bad.json');
    writeFileSync(bad, JSON.stringify({ principals: [{ name: 'ops' }] }));
    await expect(loadStartupAuth({ ...base, authFile: bad })).rejects.toThrow(/principals\[0\]\.tokenSha256/);
    await expect(loadStartupAuth({ ...base, authFile: bad })).rejects.toBeInstanceOf(BrokerStartError);
  });

  it('refuses a network address without authentication, unless allowed, and warns then', async () => {
    await expect(loadStartupAuth({ ...base, host: '0.0.0.0' })).rejects.toThrow(
      /refusing to listen on 0\.0\.0\.0/,
    );
    const allowed = await loadStartupAuth({ ...base, host: '0.0.0.0', allowUnauthenticated: true });
    expect(allowed.warnings).toEqual([expect.stringContaining('--allow-unauthenticated')]);
  });

  it('takes deprecated --auth-tokens with a warning, and not together with an auth file', async () => {
    const legacy = await loadStartupAuth({ ...base, host: '0.0.0.0', authTokens: ['t'] });
    expect(legacy.authFile?.principals).toHaveLength(1);
    expect(legacy.warnings).toEqual([expect.stringContaining('deprecated')]);
    await expect(loadStartupAuth({ ...base, authTokens: ['t'], authFile: '/x.json' })).rejects.toThrow(
      /exclude each other/,
    );
  });
});
