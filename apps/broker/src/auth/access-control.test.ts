import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '@ricochet/core';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { AccessControl, type AccessLog } from './access-control.js';
import type { AuthFile } from './auth-file.js';
import { authFileOfLegacyTokens } from './legacy-auth-tokens.js';
import { tokenDigest } from './principal-directory.js';

const digestOf = (token: string) => tokenDigest(token).toString('hex');

function authFileOf(...principals: Partial<AuthFile['principals'][number]>[]): AuthFile {
  return {
    principals: principals.map((fields, index) => ({
      name: `p${index}`,
      tokenSha256: digestOf(`token-${index}`),
      publish: [],
      consume: [],
      metrics: false,
      ...fields,
    })),
  };
}

function recordingLog(): AccessLog & { lines: string[] } {
  const lines: string[] = [];
  const write = (fields: Record<string, unknown>, message: string) =>
    lines.push(`${message} ${JSON.stringify(fields)}`);
  return { lines, info: write, warn: write, error: write };
}

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function setUp(authFile: AuthFile | undefined, authFilePath?: string) {
  const registry = new Registry();
  const log = recordingLog();
  const access = new AccessControl({ authFile, authFilePath, registry, log, clock: new ManualClock(0) });
  const failures = async () =>
    Object.fromEntries(
      (await registry.getSingleMetric('ricochet_auth_failures_total')?.get())?.values.map((value) => [
        value.labels.reason,
        value.value,
      ]) ?? [],
    );
  return { access, log, failures };
}

describe('AccessControl', () => {
  it('is disabled without an auth file', () => {
    expect(setUp(undefined).access.enabled).toBe(false);
    expect(setUp(authFileOf()).access.enabled).toBe(true);
  });

  it('refuses a missing or unknown token, counts it, and never logs the token', async () => {
    const { access, log, failures } = setUp(authFileOf({ publish: ['orders'] }));
    expect(access.authenticate(undefined, 'ws')).toMatchObject({ ok: false, reason: 'missing_token' });
    expect(access.authenticate('', 'ws')).toMatchObject({ ok: false, reason: 'missing_token' });
    expect(access.authenticate('wrong-secret', 'ws')).toMatchObject({ ok: false, reason: 'unknown_token' });
    expect(access.authenticate('token-0', 'ws')).toMatchObject({ ok: true });
    expect(await failures()).toEqual({ missing_token: 2, unknown_token: 1, forbidden: 0 });
    expect(log.lines.join('\n')).not.toContain('wrong-secret');
  });

  it('authorizes by the principal, and logs a refusal with its name', async () => {
    const { access, log, failures } = setUp(authFileOf({ name: 'orders-service', publish: ['orders'] }));
    const authn = access.authenticate('token-0', 'ws');
    if (!authn.ok) throw new Error('expected the token to be accepted');
    expect(access.authorize(authn.caller, { type: 'publish', topic: 'orders' }, 'ws')).toMatchObject({
      ok: true,
    });
    expect(access.authorize(authn.caller, { type: 'publish', topic: 'audit' }, 'ws')).toEqual({
      ok: false,
      status: 403,
      message: 'principal "orders-service" may not publish to topic "audit"',
    });
    expect(await failures()).toMatchObject({ forbidden: 1 });
    expect(log.lines.at(-1)).toContain('"principal":"orders-service"');
    expect(log.lines.join('\n')).not.toContain('token-0');
  });

  it('judges an open caller by the file in force after a replace: changed permissions, removed tokens', () => {
    const { access } = setUp(authFileOf({ publish: ['orders'] }, { publish: ['orders'] }));
    const first = access.authenticate('token-0', 'ws');
    const second = access.authenticate('token-1', 'ws');
    if (!first.ok || !second.ok) throw new Error('expected both tokens to be accepted');
    access.replace(authFileOf({ publish: ['audit'] }));
    expect(access.authorize(first.caller, { type: 'publish', topic: 'orders' }, 'ws')).toMatchObject({
      status: 403,
    });
    expect(access.authorize(first.caller, { type: 'publish', topic: 'audit' }, 'ws')).toMatchObject({
      ok: true,
    });
    expect(access.authorize(second.caller, { type: 'publish', topic: 'orders' }, 'ws')).toMatchObject({
      status: 401,
    });
  });

  it('reloads a good file and refuses a bad one, keeping the one in force', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'ricochet-access-'));
    directories.push(directory);
    const path = join(directory, 'auth.json');
    const { access, log } = setUp(authFileOf({ publish: ['orders'] }), path);
    writeFileSync(path, '{ "principals": [ { "name": "broken" ');
    const refused = await access.reload();
    expect(refused).toMatchObject({ ok: false, message: expect.stringContaining('not JSON') });
    expect(log.lines.at(-1)).toContain('the previous one stays in force');
    expect(access.authenticate('token-0', 'ws')).toMatchObject({ ok: true });

    writeFileSync(
      path,
      JSON.stringify({ principals: [{ name: 'new', tokenSha256: digestOf('token-new') }] }),
    );
    expect(await access.reload()).toEqual({ ok: true, principals: 1 });
    expect(access.authenticate('token-0', 'ws')).toMatchObject({ ok: false, reason: 'unknown_token' });
    expect(access.authenticate('token-new', 'ws')).toMatchObject({ ok: true });
  });

  it('has nothing to reload without a path', async () => {
    expect(await setUp(authFileOf()).access.reload()).toMatchObject({ ok: false });
  });

  it('limits publishing only for principals with a rate', () => {
    const { access } = setUp(authFileOf({ publishRatePerSecond: 1 }, {}));
    const [limited, free] = authFileOf({ publishRatePerSecond: 1 }, {}).principals;
    if (!limited || !free) throw new Error('two principals');
    expect(access.admitPublish(limited, 1)).toEqual({ ok: true });
    expect(access.admitPublish(limited, 1)).toEqual({ ok: false, retryAfterMs: 1_000 });
    for (let i = 0; i < 100; i++) expect(access.admitPublish(free, 10).ok).toBe(true);
  });

  it('turns deprecated --auth-tokens into principals that may do everything', () => {
    const { access } = setUp(authFileOfLegacyTokens(['old-a', 'old-b']));
    const authn = access.authenticate('old-b', 'http');
    if (!authn.ok) throw new Error('expected the legacy token to be accepted');
    expect(authn.caller.principal?.name).toBe('auth-token-2');
    for (const action of [
      { type: 'publish', topic: 'x' },
      { type: 'consume', group: 'g', topics: ['%DLQ%g'] },
      { type: 'admin', level: 'write' },
      { type: 'metrics' },
    ] as const)
      expect(access.authorize(authn.caller, action, 'http')).toMatchObject({ ok: true });
  });
});
