import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAuthFile, readAuthFile } from './auth-file.js';

const DIGEST_A = 'a'.repeat(64);
const DIGEST_B = 'B'.repeat(64);

/** DESIGN.md §7's example, verbatim but for the digests. */
const DESIGN_EXAMPLE = {
  principals: [
    { name: 'ops', tokenSha256: DIGEST_A, admin: 'write', metrics: true },
    {
      name: 'orders-service',
      tokenSha256: DIGEST_B,
      publish: ['orders', 'payments-*'],
      publishRatePerSecond: 5000,
    },
    {
      name: 'billing-worker',
      tokenSha256: 'c'.repeat(64),
      consume: [{ group: 'billing-*', topics: ['orders', '%DLQ%billing-*'] }],
    },
  ],
};

describe('parseAuthFile', () => {
  it('reads the format of DESIGN.md §7, filling defaults and lowering hex', () => {
    const parsed = parseAuthFile(JSON.stringify(DESIGN_EXAMPLE));
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const [ops, orders, billing] = parsed.authFile.principals;
    expect(ops).toEqual({
      name: 'ops',
      tokenSha256: DIGEST_A,
      admin: 'write',
      metrics: true,
      publish: [],
      consume: [],
    });
    expect(orders).toMatchObject({ tokenSha256: 'b'.repeat(64), publishRatePerSecond: 5000, metrics: false });
    expect(orders?.admin).toBeUndefined();
    expect(billing?.consume).toEqual([{ group: 'billing-*', topics: ['orders', '%DLQ%billing-*'] }]);
  });

  it('names the path of every problem', () => {
    const bad = {
      principals: [
        { name: 'x', tokenSha256: 'nothex', publish: ['a*b'] },
        { name: 'y', tokenSha256: DIGEST_A, admin: 'root', consume: [{ group: 'g', topics: [] }] },
      ],
    };
    const parsed = parseAuthFile(JSON.stringify(bad));
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.message).toContain('principals[0].tokenSha256');
    expect(parsed.message).toContain('principals[0].publish[0]');
    expect(parsed.message).toContain('principals[1].admin');
    expect(parsed.message).toContain('principals[1].consume[0].topics');
  });

  it('refuses unknown fields, duplicate names and duplicate tokens', () => {
    const typo = parseAuthFile(
      JSON.stringify({ principals: [{ name: 'x', tokenSha256: DIGEST_A, publsh: ['a'] }] }),
    );
    expect(typo).toMatchObject({ ok: false });
    const twice = parseAuthFile(
      JSON.stringify({
        principals: [
          { name: 'x', tokenSha256: DIGEST_A },
          { name: 'x', tokenSha256: DIGEST_B },
          { name: 'z', tokenSha256: DIGEST_A.toUpperCase() },
        ],
      }),
    );
    expect(twice.ok).toBe(false);
    if (twice.ok) return;
    expect(twice.message).toContain('principals[1].name: a second principal with this name');
    expect(twice.message).toContain('principals[2].tokenSha256: a second principal with this token');
  });

  it('refuses text that is not JSON, and a rate that is not positive', () => {
    expect(parseAuthFile('{ principals: ')).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^not JSON/),
    });
    expect(
      parseAuthFile(
        JSON.stringify({ principals: [{ name: 'x', tokenSha256: DIGEST_A, publishRatePerSecond: 0 }] }),
      ),
    ).toMatchObject({ ok: false });
  });
});

describe('readAuthFile', () => {
  it('reads a file, and names the path when it cannot', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'ricochet-auth-file-'));
    try {
      const path = join(directory, 'auth.json');
      writeFileSync(path, JSON.stringify(DESIGN_EXAMPLE));
      expect(await readAuthFile(path)).toMatchObject({ ok: true });
      expect(await readAuthFile(join(directory, 'missing.json'))).toMatchObject({
        ok: false,
        message: expect.stringContaining('missing.json'),
      });
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('the example of docs/guides/security.md', () => {
  it('is an auth file the broker accepts, with every field of the format', async () => {
    const { readFile } = await import('node:fs/promises');
    const guide = await readFile(new URL('../../../../docs/guides/security.md', import.meta.url), 'utf8');
    const example = /<!-- auth-file example -->\n```json\n([\s\S]*?)\n```/.exec(guide)?.[1];
    expect(example).toBeDefined();
    const parsed = parseAuthFile(example ?? '');
    expect(parsed).toMatchObject({ ok: true });
    if (!parsed.ok) return;
    const fields = new Set(parsed.authFile.principals.flatMap((principal) => Object.keys(principal)));
    for (const field of [
      'name',
      'tokenSha256',
      'publish',
      'consume',
      'admin',
      'metrics',
      'publishRatePerSecond',
    ])
      expect(fields.has(field), field).toBe(true);
  });
});
