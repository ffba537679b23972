import { describe, expect, it } from 'vitest';
import { envNameOf, parseCommandLine, resolveBrokerConfig } from './config.js';

describe('parseCommandLine', () => {
  it('applies defaults', () => {
    const parsed = parseCommandLine([], {});
    expect(parsed).toMatchObject({
      ok: true,
      config: {
        port: 7720,
        host: '127.0.0.1',
        dataDir: './ricochet-data',
        flushPolicy: 'fsync',
        maxBodyBytes: 4 * 1024 * 1024,
      },
    });
  });

  it('reads flags in both spellings, and flags win over the environment', () => {
    const parsed = parseCommandLine(['--port', '0', '--data-dir=/tmp/x', '--auto-create-topics', 'false'], {
      RICOCHET_PORT: '9000',
      RICOCHET_HOST: '0.0.0.0',
      RICOCHET_AUTH_TOKENS: 'a, b',
    });
    expect(parsed).toMatchObject({
      ok: true,
      config: {
        port: 0,
        host: '0.0.0.0',
        dataDir: '/tmp/x',
        autoCreateTopics: false,
        authTokens: ['a', 'b'],
      },
    });
  });

  it('turns the dashboard off with --no-ui or RICOCHET_UI=false, and on by default', () => {
    expect(parseCommandLine([], {})).toMatchObject({ ok: true, config: { ui: true } });
    expect(parseCommandLine(['--no-ui'], {})).toMatchObject({ ok: true, config: { ui: false } });
    expect(parseCommandLine([], { RICOCHET_UI: 'false' })).toMatchObject({ ok: true, config: { ui: false } });
    expect(parseCommandLine(['--no-port'], {})).toMatchObject({
      ok: false,
      message: expect.stringContaining('unknown flag --no-port'),
    });
  });

  it('takes a bare boolean flag as true', () => {
    expect(parseCommandLine(['--auto-create-groups'], { RICOCHET_AUTO_CREATE_GROUPS: 'off' })).toMatchObject({
      ok: true,
      config: { autoCreateGroups: true },
    });
  });

  it.each([
    [['--port', 'abc'], {}, '--port:'],
    [['--port', '70000'], {}, '--port:'],
    [[], { RICOCHET_FLUSH_POLICY: 'sometimes' }, 'RICOCHET_FLUSH_POLICY:'],
    [['--auto-create-topics', 'maybe'], {}, '--auto-create-topics:'],
    [['--nope'], {}, 'unknown flag --nope'],
    [['--port'], {}, '--port needs a value'],
  ])('names the culprit of %j %j', (argv, env, expected) => {
    const parsed = parseCommandLine(argv, env);
    expect(parsed.ok).toBe(false);
    if (parsed.ok === false) expect(parsed.message).toContain(expected);
  });

  it('prints usage on --help', () => {
    const parsed = parseCommandLine(['--help'], {});
    expect(parsed.ok).toBe('help');
    if (parsed.ok === 'help') expect(parsed.message).toContain('RICOCHET_DATA_DIR');
  });
});

describe('config helpers', () => {
  it('derives environment names', () => {
    expect(envNameOf('maxReadyQueuePerGroup')).toBe('RICOCHET_MAX_READY_QUEUE_PER_GROUP');
  });

  it('rejects a bad in-process config with the field named', () => {
    expect(() => resolveBrokerConfig({ port: -1 })).toThrow(/port/);
  });
});
