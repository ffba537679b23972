import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
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
  /** Principals with RocketMQ credentials, by access key: an access key names, it proves nothing. */
  readonly #byAccessKey: ReadonlyMap<string, Principal>;

  constructor(principals: readonly Principal[]) {
    this.#entries = principals.map((principal) => ({
      digest: Buffer.from(principal.tokenSha256, 'hex'),
      principal,
    }));
    this.#byAccessKey = new Map(
      principals.flatMap((principal) =>
        principal.rocketmq === undefined ? [] : [[principal.rocketmq.accessKey, principal] as const],
      ),
    );
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

  /** The principal with RocketMQ credentials under `accessKey`, or `undefined`. */
  findByAccessKey(accessKey: string): Principal | undefined {
    return this.#byAccessKey.get(accessKey);
  }

  /**
   * The principal whose RocketMQ secret signed `dateTime` as `signature` (upper-case hex of
   * HMAC-SHA1, RocketMQ's `MQv2-HMAC-SHA1`), or `undefined`. Compared in constant time.
   */
  verifyRocketSignature(accessKey: string, dateTime: string, signature: string): Principal | undefined {
    const principal = this.#byAccessKey.get(accessKey);
    if (principal?.rocketmq === undefined) return undefined;
    const expected = Buffer.from(rocketSignatureOf(principal.rocketmq.secretKey, dateTime), 'utf8');
    const given = Buffer.from(signature, 'utf8');
    return expected.length === given.length && timingSafeEqual(expected, given) ? principal : undefined;
  }

  /** The principal holding `token`, or `undefined`. */
  find(token: string): Principal | undefined {
    return this.findByDigest(tokenDigest(token));
  }
}

/** RocketMQ's request signature: upper-case hex of HMAC-SHA1 of `x-mq-date-time` under the secret key. */
export function rocketSignatureOf(secretKey: string, dateTime: string): string {
  return createHmac('sha1', secretKey).update(dateTime, 'utf8').digest('hex').toUpperCase();
}
