import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  createTestCertificateAuthority,
  integer,
  issueServerCertificate,
} from './support/test-certificate.js';

/** The certificates the TLS contract tests make at run time must parse, whatever their random serial. */
describe('test certificates (support)', () => {
  it('encodes an INTEGER in minimal DER, whatever zero bytes lead it', () => {
    const hex = (bytes: number[]) => integer(Buffer.from(bytes)).toString('hex');
    expect(hex([0x00, 0x10, 0x20])).toBe('02021020');
    expect(hex([0x00, 0x00, 0x90])).toBe('02020090');
    expect(hex([0x90, 0x01])).toBe('0203009001');
    expect(hex([0x00])).toBe('020100');
    expect(hex([0x02])).toBe('020102');
  });

  it('makes certificates OpenSSL parses, the server certificate signed by its authority', () => {
    for (let i = 0; i < 20; i++) {
      const ca = createTestCertificateAuthority();
      const pair = issueServerCertificate(ca);
      const authority = new X509Certificate(ca.certPem);
      expect(new X509Certificate(pair.certPem).verify(authority.publicKey)).toBe(true);
    }
  });
});
