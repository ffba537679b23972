import { describe, expect, it } from 'vitest';
import { isLoopbackHost, unauthenticatedBindRefusal } from './bind-policy.js';

describe('isLoopbackHost', () => {
  it('knows the loopback addresses', () => {
    for (const host of [
      '127.0.0.1',
      '127.1.2.3',
      'localhost',
      'LOCALHOST',
      '::1',
      '[::1]',
      '::ffff:127.0.0.1',
    ])
      expect(isLoopbackHost(host), host).toBe(true);
  });

  it('treats every other address and name as reachable from the network', () => {
    for (const host of [
      '0.0.0.0',
      '::',
      '10.0.0.1',
      '128.0.0.1',
      'example.com',
      'localhost.example.com',
      '::ffff:10.0.0.1',
    ])
      expect(isLoopbackHost(host), host).toBe(false);
  });
});

describe('unauthenticatedBindRefusal', () => {
  it('refuses a network address without auth, and says what to do', () => {
    const refusal = unauthenticatedBindRefusal({
      host: '0.0.0.0',
      authenticated: false,
      allowUnauthenticated: false,
    });
    expect(refusal).toContain('--auth-file');
    expect(refusal).toContain('--allow-unauthenticated');
  });

  it('allows loopback, an authenticated broker, or an explicit opt-out', () => {
    expect(
      unauthenticatedBindRefusal({ host: '127.0.0.1', authenticated: false, allowUnauthenticated: false }),
    ).toBeUndefined();
    expect(
      unauthenticatedBindRefusal({ host: '0.0.0.0', authenticated: true, allowUnauthenticated: false }),
    ).toBeUndefined();
    expect(
      unauthenticatedBindRefusal({ host: '0.0.0.0', authenticated: false, allowUnauthenticated: true }),
    ).toBeUndefined();
  });
});
