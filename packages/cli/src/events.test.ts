import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliTestBroker, cli, startCli, startCliTestBroker } from './cli-run.fixture.js';
import { EXIT_CODES } from './exit-codes.js';

let broker: CliTestBroker;
let endpoint: string[];

beforeAll(async () => {
  broker = await startCliTestBroker();
  endpoint = ['--endpoint', broker.httpUrl];
});
afterAll(() => broker[Symbol.asyncDispose]());

describe('ricochet events', () => {
  it('follows the events of the group and type asked for, one line each, until stopped', async () => {
    await cli(['groups', 'set', 'billing', 'maxRetries=3', ...endpoint]);
    await cli(['groups', 'set', 'shipping', 'maxRetries=3', ...endpoint]);
    const stop = new AbortController();
    const events = startCli(['events', '--group', 'billing', ...endpoint], { signal: stop.signal });
    await events.stderr.until(/^following events/m);
    await cli(['groups', 'pause', 'shipping', ...endpoint]);
    await cli(['groups', 'pause', 'billing', ...endpoint]);
    await cli(['groups', 'resume', 'billing', ...endpoint]);
    await events.stdout.until(/group_resumed/);
    stop.abort();
    const run = await events.done;
    expect(run.code).toBe(EXIT_CODES.OK);
    expect(run.stdout.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^\S+Z {2}group_paused +billing {2}manual: paused by hand$/),
      expect.stringMatching(/^\S+Z {2}group_resumed +billing {2}manual: resumed by hand$/),
    ]);
  });

  it('prints the raw events with --json, filtered by --type', async () => {
    const stop = new AbortController();
    const events = startCli(['events', '--type', 'group_paused', '--json', ...endpoint], {
      signal: stop.signal,
    });
    await events.stderr.until(/^following events/m);
    await cli(['groups', 'set', 'audit', 'maxRetries=3', ...endpoint]);
    await cli(['groups', 'pause', 'audit', ...endpoint]);
    await cli(['groups', 'resume', 'audit', ...endpoint]);
    await events.stdout.until(/\n/);
    stop.abort();
    const run = await events.done;
    expect(
      run.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([
      {
        type: 'group_paused',
        group: 'audit',
        atMs: expect.any(Number),
        cause: 'manual',
        why: 'paused by hand',
      },
    ]);
  });

  it('refuses a type it does not know, before connecting', async () => {
    const run = await cli(['events', '--type', 'everything', ...endpoint]);
    expect(run.code).toBe(EXIT_CODES.USAGE);
    expect(run.stderr).toContain("unknown type 'everything'");
  });
});
