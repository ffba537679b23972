import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Principal } from './auth-file.js';
import { PrincipalDirectory, tokenDigest } from './principal-directory.js';

function principal(name: string, token: string): Principal {
  const tokenSha256 = createHash('sha256').update(token).digest('hex');
  return { name, tokenSha256, publish: [], consume: [], metrics: false };
}

describe('PrincipalDirectory', () => {
  const directory = new PrincipalDirectory([principal('a', 'token-a'), principal('b', 'token-b')]);

  it('finds the principal whose token digest matches', () => {
    expect(directory.find('token-a')?.name).toBe('a');
    expect(directory.find('token-b')?.name).toBe('b');
    expect(directory.findByDigest(tokenDigest('token-b'))?.name).toBe('b');
    expect(directory.size).toBe(2);
  });

  it('finds nobody for an unknown token, a near miss or an empty one', () => {
    expect(directory.find('token-c')).toBeUndefined();
    expect(directory.find('token-a ')).toBeUndefined();
    expect(directory.find('')).toBeUndefined();
    expect(new PrincipalDirectory([]).find('token-a')).toBeUndefined();
  });

  it('digests tokens with SHA-256', () => {
    expect(tokenDigest('abc').toString('hex')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
  });
});
