import { describe, expect, it } from 'vitest';
import { envNameOf, parseCommandLine, USAGE } from './command-line.js';
import { type BrokerConfig, brokerConfigSchema } from './config.js';

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

  it('splits a PostgreSQL store into 8 queues spread over the brokers by default, and spreads only queues to spread', () => {
    const store = 'postgres://db.test/ricochet';
    expect(parseCommandLine(['--store', store, '--store-queues', '4', '--store-spread'], {})).toMatchObject({
      ok: true,
      config: { storeQueues: 4, storeSpread: true },
    });
    expect(
      parseCommandLine(['--store', store], { RICOCHET_STORE_QUEUES: '2', RICOCHET_STORE_SPREAD: 'true' }),
    ).toMatchObject({
      ok: true,
      config: { storeSpread: true },
    });
    // A PostgreSQL store is split into 8 queues, spread, unless told; the embedded one is one store.
    expect(parseCommandLine(['--store', store], {})).toMatchObject({
      ok: true,
      config: { storeQueues: 8, storeSpread: true },
    });
    expect(parseCommandLine([], {})).toMatchObject({
      ok: true,
      config: { storeQueues: 1, storeSpread: false },
    });
    expect(parseCommandLine(['--store', store, '--no-store-spread'], {})).toMatchObject({
      ok: true,
      config: { storeQueues: 8, storeSpread: false },
    });
    expect(parseCommandLine(['--store', store, '--store-queues', '1'], {})).toMatchObject({
      ok: true,
      config: { storeQueues: 1, storeSpread: false },
    });
    const alone = parseCommandLine(['--store', store, '--store-queues', '1', '--store-spread'], {});
    expect(alone.ok).toBe(false);
    if (alone.ok === false) expect(alone.message).toContain('storeQueues to 2 or more');
  });

  it('reads the auth flags from flags and the environment', () => {
    expect(
      parseCommandLine(['--allow-unauthenticated'], { RICOCHET_AUTH_FILE: '/etc/ricochet/auth.json' }),
    ).toMatchObject({
      ok: true,
      config: { authFile: '/etc/ricochet/auth.json', allowUnauthenticated: true },
    });
    const defaults = parseCommandLine([], {});
    expect(defaults).toMatchObject({ ok: true, config: { allowUnauthenticated: false } });
    if (defaults.ok === true) expect(defaults.config.authFile).toBeUndefined();
    expect(parseCommandLine(['--auth-file=/a.json'], { RICOCHET_ALLOW_UNAUTHENTICATED: 'no' })).toMatchObject(
      {
        ok: true,
        config: { authFile: '/a.json', allowUnauthenticated: false },
      },
    );
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

describe('envNameOf', () => {
  it('derives environment names', () => {
    expect(envNameOf('maxReadyQueuePerGroup')).toBe('RICOCHET_MAX_READY_QUEUE_PER_GROUP');
  });

  it('gives every setting a flag and a RICOCHET_* variable: a container is configured by its environment alone', () => {
    const settings = Object.keys(brokerConfigSchema.in.shape) as (keyof BrokerConfig)[];
    expect(settings.length).toBeGreaterThan(40);
    const missing = settings.filter((setting) => !USAGE.includes(` ${envNameOf(setting)}\n`));
    expect(missing).toEqual([]);
  });
});
