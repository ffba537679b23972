import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliTestBroker, cli, startCli, startCliTestBroker } from './cli-run.fixture.js';
import { TAIL_GROUP } from './commands/tail.js';
import { EXIT_CODES } from './exit-codes.js';

let broker: CliTestBroker;
let endpoint: string[];

beforeAll(async () => {
  broker = await startCliTestBroker();
  endpoint = ['--endpoint', broker.httpUrl];
});
afterAll(() => broker[Symbol.asyncDispose]());

describe('ricochet send', () => {
  it('sends the body of --body or stdin with tag, keys and properties, and prints the receipt', async () => {
    const sent = await cli([
      'send',
      'orders',
      '--body',
      '{"orderId":1042}',
      '--tag',
      'created',
      '--key',
      'order-1042',
      '--key',
      'customer-7',
      '--property',
      'source=cli',
      ...endpoint,
    ]);
    expect(sent.code).toBe(EXIT_CODES.OK);
    const [, messageId] = /^sent (\S+) to orders at offset 0\n$/.exec(sent.stdout) ?? [];
    const view = JSON.parse((await cli(['messages', 'get', messageId ?? '', '--json', ...endpoint])).stdout);
    expect(view.message).toMatchObject({
      tag: 'created',
      keys: ['order-1042', 'customer-7'],
      properties: { source: 'cli' },
      bodyBase64: Buffer.from('{"orderId":1042}').toString('base64'),
    });

    const piped = await cli(['send', 'orders', '--json', ...endpoint], { stdin: 'from stdin\n' });
    expect(JSON.parse(piped.stdout)).toMatchObject({ topic: 'orders', offset: 1 });
    const human = await cli(['messages', 'get', JSON.parse(piped.stdout).messageId, ...endpoint]);
    expect(human.stdout).toMatch(/^body:\s+11 bytes\n {2}from stdin\n/m);
    expect(human.stdout).toContain('no group reads orders yet');
  });

  it('refuses to wait for a body typed on a terminal', async () => {
    const run = await cli(['send', 'orders', ...endpoint]);
    expect(run.code).toBe(EXIT_CODES.USAGE);
    expect(run.stderr).toContain('give the body with --body <text>, or pipe it in');
  });

  it('exits 6 with the broker reason for a message the broker refuses', async () => {
    await cli(['topics', 'set', 'fifo-only', 'type=fifo', ...endpoint]);
    const run = await cli(['send', 'fifo-only', '--body', 'x', ...endpoint]);
    expect(run.code).toBe(EXIT_CODES.REJECTED);
    expect(run.stderr).toMatch(/^error: .*\(code 409\)$/m);
  });
});

describe('ricochet tail', () => {
  it('prints the messages sent after it started, until stopped, in its own broadcasting instance', async () => {
    await cli(['send', 'events', '--body', 'before the tail', ...endpoint]);
    const stop = new AbortController();
    const tail = startCli(['tail', 'events', ...endpoint], { signal: stop.signal });
    await tail.stderr.until(/^tailing events as group ricochet-tail \(instance tail-[0-9a-f]+\)/m);
    await cli(['send', 'events', '--tag', 'first', '--body', 'hello', ...endpoint]);
    await cli(['send', 'events', '--body', 'world', ...endpoint]);
    await tail.stdout.until(/world/);
    stop.abort();
    const run = await tail.done;
    expect(run.code).toBe(EXIT_CODES.OK);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\S+Z {2}events@1 {2}\S+ {2}tag=first {2}hello$/);
    expect(lines[1]).toMatch(/^\S+Z {2}events@2 {2}\S+ {2}world$/);

    const group = JSON.parse((await cli(['groups', 'get', TAIL_GROUP, '--json', ...endpoint])).stdout);
    expect(group.config).toMatchObject({ consumeMode: 'broadcasting', startFrom: 'latest' });
  });

  it('prints one JSON object per line with --json, and joins a named group with --group', async () => {
    const stop = new AbortController();
    const tail = startCli(['tail', 'audit', '--group', 'auditors', '--tag', 'kept', '--json', ...endpoint], {
      signal: stop.signal,
    });
    await tail.stderr.until(/^tailing audit as group auditors/m);
    await cli(['send', 'audit', '--tag', 'dropped', '--body', 'not this one', ...endpoint]);
    await cli(['send', 'audit', '--tag', 'kept', '--body', 'this one', ...endpoint]);
    await tail.stdout.until(/\n/);
    stop.abort();
    const run = await tail.done;
    expect(run.code).toBe(EXIT_CODES.OK);
    const [line, ...rest] = run.stdout.trimEnd().split('\n');
    expect(rest).toEqual([]);
    expect(JSON.parse(line ?? '')).toMatchObject({
      topic: 'audit',
      offset: 1,
      tag: 'kept',
      deliveryAttempt: 1,
      bodyBase64: Buffer.from('this one').toString('base64'),
    });
    // The group committed what the tail printed.
    const group = JSON.parse((await cli(['groups', 'get', 'auditors', '--json', ...endpoint])).stdout);
    expect(group.stats.committed).toBe(1);
  });
});
