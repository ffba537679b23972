import { describe, expect, it } from 'vitest';
import { bearerTokenOf, httpActionOf } from './http-access.js';

describe('httpActionOf', () => {
  it('leaves the probes and the WebSocket upgrade open', () => {
    expect(httpActionOf('GET', '/healthz')).toBeUndefined();
    expect(httpActionOf('GET', '/readyz')).toBeUndefined();
    expect(httpActionOf('GET', '/v1/ws')).toBeUndefined();
  });

  it("leaves the dashboard's static files open: they hold no data, and the page asks for a token", () => {
    for (const path of ['/ui', '/ui/', '/ui/*', '/ui/assets/index.js'])
      expect(httpActionOf('GET', path)).toBeUndefined();
    expect(httpActionOf('GET', '/uix')).toEqual({ type: 'admin', level: 'read' });
  });

  it('asks metrics for /metrics, admin read for GETs, admin write for the rest', () => {
    expect(httpActionOf('GET', '/metrics')).toEqual({ type: 'metrics' });
    expect(httpActionOf('GET', '/v1/groups/billing')).toEqual({ type: 'admin', level: 'read' });
    expect(httpActionOf('HEAD', '/v1/topics')).toEqual({ type: 'admin', level: 'read' });
    expect(httpActionOf('GET', '/v1/cluster')).toEqual({ type: 'admin', level: 'read' });
    expect(httpActionOf('PUT', '/v1/groups/billing')).toEqual({ type: 'admin', level: 'write' });
    expect(httpActionOf('POST', '/v1/groups/billing/dlq/redrive')).toEqual({ type: 'admin', level: 'write' });
    expect(httpActionOf('DELETE', '/healthz/x')).toEqual({ type: 'admin', level: 'write' });
  });

  it('guards paths no route serves, and look-alikes of the open ones', () => {
    for (const path of ['/nowhere', '/healthz/', '/readyz/', '/v1/ws/', '//metrics', '/HEALTHZ'])
      expect(httpActionOf('GET', path), path).toBeDefined();
  });
});

describe('bearerTokenOf', () => {
  it('reads the token of a Bearer header, in any case of the scheme', () => {
    expect(bearerTokenOf('Bearer abc')).toBe('abc');
    expect(bearerTokenOf('bearer abc')).toBe('abc');
    expect(bearerTokenOf('Basic abc')).toBeUndefined();
    expect(bearerTokenOf('Bearer')).toBeUndefined();
    expect(bearerTokenOf(undefined)).toBeUndefined();
  });
});
