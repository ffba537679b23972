import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseAuthFile } from './auth-file.js';
import { newToken, runTokenCommand } from './token-command.js';

describe('runTokenCommand', () => {
  it('prints a token and an entry holding its SHA-256 that the auth file accepts', () => {
    const result = runTokenCommand(['--name', 'billing-worker']);
    expect(result.ok).toBe(true);
    if (result.ok !== true) return;
    const lines = result.output.split('\n');
    const token = lines[1] ?? '';
    const entry = JSON.parse(lines[4] ?? '') as { name: string; tokenSha256: string };
    expect(entry).toEqual({
      name: 'billing-worker',
      tokenSha256: createHash('sha256').update(token).digest('hex'),
    });
    expect(parseAuthFile(JSON.stringify({ principals: [entry] }))).toMatchObject({ ok: true });
  });

  it('draws 256 random bits per token, a new one each time', () => {
    const sizes: number[] = [];
    const token = newToken((size) => {
      sizes.push(size);
      return Buffer.alloc(size, 1);
    });
    expect(sizes).toEqual([32]);
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    expect(newToken()).not.toBe(newToken());
  });

  it('takes --name=x, and refuses a missing or bad name and unknown arguments', () => {
    expect(runTokenCommand(['--name=ops'])).toMatchObject({ ok: true });
    expect(runTokenCommand([])).toMatchObject({
      ok: false,
      message: expect.stringContaining('--name is required'),
    });
    expect(runTokenCommand(['--name'])).toMatchObject({ ok: false });
    expect(runTokenCommand(['--name', 'has space'])).toMatchObject({ ok: false });
    expect(runTokenCommand(['--nme', 'x'])).toMatchObject({ ok: false });
    expect(runTokenCommand(['--help'])).toMatchObject({ ok: 'help' });
  });
});
