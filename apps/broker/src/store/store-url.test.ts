import { describe, expect, it } from 'vitest';
import { redactStoreUrl } from './store-url.js';

describe('redactStoreUrl', () => {
  it('drops the password of a URL, and leaves one without a password as it is', () => {
    expect(redactStoreUrl('postgres://ricochet:s3cr%40t@db.internal:5432/ricochet')).toBe(
      'postgres://ricochet@db.internal:5432/ricochet',
    );
    expect(redactStoreUrl('postgres://ricochet@127.0.0.1:5432/ricochet')).toBe(
      'postgres://ricochet@127.0.0.1:5432/ricochet',
    );
    expect(redactStoreUrl('postgresql://127.0.0.1/ricochet')).toBe('postgresql://127.0.0.1/ricochet');
  });

  it("reads libpq's multi-host form, which new URL refuses", () => {
    const url = 'postgres://ricochet:pw@h1:5432,h2:5432/ricochet?target_session_attrs=read-write';
    expect(() => new URL(url)).toThrow();
    expect(redactStoreUrl(url)).toBe(
      'postgres://ricochet@h1:5432,h2:5432/ricochet?target_session_attrs=read-write',
    );
  });

  it('drops a password given as a parameter', () => {
    expect(redactStoreUrl('postgres://h1,h2/ricochet?user=ricochet&password=pw&sslmode=require')).toBe(
      'postgres://h1,h2/ricochet?user=ricochet&password=&sslmode=require',
    );
  });
});
