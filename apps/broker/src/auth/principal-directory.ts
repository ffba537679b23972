import { createHash, timingSafeEqual } from 'node:crypto';
import type { Principal } from './auth-file.js';

/** The SHA-256 of a token: what the auth file stores and what the broker compares. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * The principals of one auth file, found by their token's digest. The digest of the presented
 * token is compared with every principal's, each with `timingSafeEqual` and without stopping at a
 * match, so how long a lookup takes says nothing about which bytes were right nor where the match
 * is. (A hash-map lookup by digest would branch on the digest's bytes.)
 */
export class PrincipalDirectory {
  readonly #entries: readonly { readonly digest: Buffer; readonly principal: Principal }[];

  constructor(principals: readonly Principal[]) {
    this.#entries = principals.map((principal) => ({
      digest: Buffer.from(principal.tokenSha256, 'hex'),
      principal,
    }));
  }

  get size(): number {
    return this.#entries.length;
  }

  /** The principal holding the token with this digest, or `undefined`. */
  findByDigest(digest: Buffer): Principal | undefined {
    let found: Principal | undefined;
    for (const entry of this.#entries) {
      // Both are 32 bytes: timingSafeEqual throws on a length mismatch, which cannot happen here.
      if (timingSafeEqual(entry.digest, digest) && found === undefined) found = entry.principal;
    }
    return found;
  }

  /** The principal holding `token`, or `undefined`. */
  find(token: string): Principal | undefined {
    return this.findByDigest(tokenDigest(token));
  }
}
