import { describe, expect, it } from 'vitest';
import { parseAuthFile } from './auth-file.js';
import { PrincipalDirectory, rocketSignatureOf } from './principal-directory.js';
import { dateTimeMs, MAX_SIGNATURE_SKEW_MS, parseRocketSignature } from './rocketmq-signature.js';

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const DATE_TIME = '20261127T120000Z';
const TOKEN_SHA = 'a'.repeat(64);

describe('RocketMQ request signatures', () => {
  it('reads the header the official clients write', () => {
    const header = `MQv2-HMAC-SHA1 Credential=orders, SignedHeaders=x-mq-date-time, Signature=${rocketSignatureOf('s'.repeat(16), DATE_TIME)}`;
    expect(parseRocketSignature(header, DATE_TIME, NOW)).toEqual({
      ok: true,
      signed: {
        accessKey: 'orders',
        dateTime: DATE_TIME,
        signature: rocketSignatureOf('s'.repeat(16), DATE_TIME),
      },
    });
    expect(parseRocketSignature(undefined, DATE_TIME, NOW)).toBeUndefined();
  });

  it('refuses another scheme, unsigned date-time, and a date-time outside ±15 minutes', () => {
    expect(parseRocketSignature('Bearer abc', DATE_TIME, NOW)).toMatchObject({ ok: false });
    expect(
      parseRocketSignature('MQv2-HMAC-SHA1 Credential=a, SignedHeaders=host, Signature=AB', DATE_TIME, NOW),
    ).toMatchObject({ ok: false });
    const header = 'MQv2-HMAC-SHA1 Credential=a, SignedHeaders=x-mq-date-time, Signature=AB';
    expect(parseRocketSignature(header, undefined, NOW)).toMatchObject({ ok: false });
    expect(parseRocketSignature(header, DATE_TIME, NOW + MAX_SIGNATURE_SKEW_MS)).toMatchObject({ ok: true });
    expect(parseRocketSignature(header, DATE_TIME, NOW + MAX_SIGNATURE_SKEW_MS + 1)).toMatchObject({
      ok: false,
    });
    expect(dateTimeMs('2026-11-27T12:00:00Z')).toBeUndefined();
    expect(dateTimeMs(DATE_TIME)).toBe(NOW);
  });

  it('finds the principal whose secret signed, and no other', () => {
    const parsed = parseAuthFile(
      JSON.stringify({
        principals: [
          {
            name: 'orders',
            tokenSha256: TOKEN_SHA,
            rocketmq: { accessKey: 'AK1', secretKey: 'secret-key-of-ak1' },
          },
        ],
      }),
    );
    if (!parsed.ok) throw new Error(parsed.message);
    const directory = new PrincipalDirectory(parsed.authFile.principals);
    const good = rocketSignatureOf('secret-key-of-ak1', DATE_TIME);
    expect(directory.verifyRocketSignature('AK1', DATE_TIME, good)?.name).toBe('orders');
    expect(
      directory.verifyRocketSignature('AK1', DATE_TIME, rocketSignatureOf('another-secret-key', DATE_TIME)),
    ).toBeUndefined();
    expect(directory.verifyRocketSignature('AK1', '20261127T120001Z', good)).toBeUndefined();
    expect(directory.verifyRocketSignature('AK2', DATE_TIME, good)).toBeUndefined();
  });

  it('the auth file refuses a short secret key and an access key used twice', () => {
    const principal = (name: string, tokenChar: string, secretKey: string) => ({
      name,
      tokenSha256: tokenChar.repeat(64),
      rocketmq: { accessKey: 'AK', secretKey },
    });
    expect(parseAuthFile(JSON.stringify({ principals: [principal('a', 'a', 'short')] }))).toMatchObject({
      ok: false,
      message: expect.stringContaining('principals[0].rocketmq.secretKey'),
    });
    const twice = {
      principals: [principal('a', 'a', 'secret-key-number-1'), principal('b', 'b', 'secret-key-number-2')],
    };
    expect(parseAuthFile(JSON.stringify(twice))).toMatchObject({
      ok: false,
      message: expect.stringContaining('a second principal with this access key'),
    });
  });
});
