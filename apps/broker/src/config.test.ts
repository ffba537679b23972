import { describe, expect, it } from 'vitest';
import { parseCommandLine } from './command-line.js';
import { maxFrameBytesOf, resolveBrokerConfig } from './config.js';

describe('resolveBrokerConfig', () => {
  it('rejects a bad in-process config with the field named', () => {
    expect(() => resolveBrokerConfig({ port: -1 })).toThrow(/port/);
  });
});

describe('TLS and connection limits', () => {
  it('reads the TLS pair and the limits from flags and the environment, with defaults', () => {
    const parsed = parseCommandLine(['--tls-cert', 'a.crt', '--max-connections=50'], {
      RICOCHET_TLS_KEY: 'a.key',
      RICOCHET_MAX_SUBSCRIPTIONS_PER_CONNECTION: '3',
    });
    expect(parsed).toMatchObject({
      ok: true,
      config: {
        tlsCert: 'a.crt',
        tlsKey: 'a.key',
        maxConnections: 50,
        maxSubscriptionsPerConnection: 3,
        maxInflightRequestsPerConnection: 4096,
        maxWaitingReceivesPerConnection: 64,
        httpHeadersTimeoutMs: 10_000,
        httpRequestTimeoutMs: 30_000,
        websocketMessageTimeoutMs: 60_000,
      },
    });
    if (parsed.ok === true) expect(maxFrameBytesOf(parsed.config)).toBe(16 * 1024 * 1024);
  });

  it.each([
    [['--tls-cert', 'a.crt'], 'TLS needs both tlsCert and tlsKey'],
    [['--max-frame-bytes', '1000'], '--max-frame-bytes'],
    [['--http-headers-timeout-ms', '5000', '--http-request-timeout-ms', '1000'], '--http-request-timeout-ms'],
  ])('refuses %j naming %s', (argv, expected) => {
    const parsed = parseCommandLine(argv, {});
    expect(parsed.ok).toBe(false);
    if (parsed.ok === false) expect(parsed.message).toContain(expected);
  });

  it('keeps a configured frame limit', () => {
    expect(maxFrameBytesOf(resolveBrokerConfig({ maxBodyBytes: 1024, maxFrameBytes: 70_000 }))).toBe(70_000);
  });
});
