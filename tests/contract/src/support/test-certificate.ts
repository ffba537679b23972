import { generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isIPv4 } from 'node:net';

/**
 * TEST MATERIAL ONLY: a tiny X.509 v3 builder on node:crypto, so TLS tests make their own
 * certificate authority and server certificate at run time — no `openssl` binary, no committed key.
 * ECDSA P-256 with SHA-256; DER written by hand (RFC 5280 §4.1).
 */

/** A certificate and its private key, PEM. */
export interface TestKeyPair {
  readonly certPem: string;
  readonly keyPem: string;
}

/** A test certificate authority: its certificate is the `ca` clients trust. */
export interface TestCertificateAuthority extends TestKeyPair {
  readonly name: string;
  readonly privateKey: KeyObject;
}

const OID = {
  commonName: '2.5.4.3',
  ecPublicKey: '1.2.840.10045.2.1',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  basicConstraints: '2.5.29.19',
  subjectAltName: '2.5.29.17',
} as const;

const DAY_MS = 24 * 60 * 60 * 1000;

/** A self-signed certificate authority named `name`, valid from a day ago for a year. */
export function createTestCertificateAuthority(name = 'Ricochet test CA'): TestCertificateAuthority {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const certPem = certificatePem({
    subject: name,
    issuer: name,
    publicKey,
    signingKey: privateKey,
    extensions: [extension(OID.basicConstraints, true, sequence(derBoolean(true)))],
  });
  return { name, privateKey, certPem, keyPem: keyPem(privateKey) };
}

/** A server certificate for `hosts` (IPv4 addresses or DNS names), signed by `ca`. */
export function issueServerCertificate(
  ca: TestCertificateAuthority,
  hosts: readonly string[] = ['127.0.0.1', 'localhost'],
): TestKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const altNames = hosts.map(
    (host) =>
      isIPv4(host)
        ? der(0x87, Buffer.from(host.split('.').map(Number))) // [7] iPAddress
        : der(0x82, Buffer.from(host, 'ascii')), // [2] dNSName
  );
  const certPem = certificatePem({
    subject: hosts[0] ?? 'localhost',
    issuer: ca.name,
    publicKey,
    signingKey: ca.privateKey,
    extensions: [
      extension(OID.basicConstraints, true, sequence()),
      extension(OID.subjectAltName, false, sequence(...altNames)),
    ],
  });
  return { certPem, keyPem: keyPem(privateKey) };
}

function certificatePem(options: {
  subject: string;
  issuer: string;
  publicKey: KeyObject;
  signingKey: KeyObject;
  extensions: Buffer[];
}): string {
  const signatureAlgorithm = sequence(objectId(OID.ecdsaWithSha256));
  const now = Date.now();
  const tbs = sequence(
    der(0xa0, integer(Buffer.from([2]))), // [0] version v3
    integer(randomBytes(16)),
    signatureAlgorithm,
    name(options.issuer),
    sequence(utcTime(new Date(now - DAY_MS)), utcTime(new Date(now + 365 * DAY_MS))),
    name(options.subject),
    options.publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, sequence(...options.extensions)), // [3] extensions
  );
  const signature = sign('sha256', tbs, options.signingKey);
  const certificate = sequence(tbs, signatureAlgorithm, bitString(signature));
  const base64 = certificate.toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN CERTIFICATE-----\n${base64.trimEnd()}\n-----END CERTIFICATE-----\n`;
}

function keyPem(privateKey: KeyObject): string {
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

function extension(oid: string, critical: boolean, value: Buffer): Buffer {
  return sequence(objectId(oid), ...(critical ? [derBoolean(true)] : []), der(0x04, value));
}

function name(commonName: string): Buffer {
  return sequence(der(0x31, sequence(objectId(OID.commonName), der(0x0c, Buffer.from(commonName, 'utf8')))));
}

function der(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  return Buffer.concat([Buffer.from([tag]), derLength(body.length), body]);
}

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function sequence(...contents: Buffer[]): Buffer {
  return der(0x30, ...contents);
}

/**
 * A non-negative INTEGER from big-endian bytes, in DER's one encoding: no leading zero byte unless
 * the next one has its high bit set (which would make it negative). A random serial starting with
 * a zero byte once went out padded: OpenSSL refuses such a certificate ("illegal padding"), and
 * Node then silently dropped the CA, so about one test certificate in 512 was not trusted.
 */
export function integer(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const minimal = bytes.subarray(start);
  return der(0x02, (minimal[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), minimal]) : minimal);
}

function derBoolean(value: boolean): Buffer {
  return der(0x01, Buffer.from([value ? 0xff : 0]));
}

function bitString(bytes: Buffer): Buffer {
  return der(0x03, Buffer.from([0]), bytes);
}

function objectId(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let value = arc >>> 7; value > 0; value >>>= 7) base128.unshift((value & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return der(0x06, Buffer.from(bytes));
}

function utcTime(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-11-23T08:45:00.000Z
  const text = `${iso.slice(2, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return der(0x17, Buffer.from(text, 'ascii'));
}
