import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliTestBroker, cli, startCli, startCliTestBroker } from './cli-run.fixture.js';
import { EXIT_CODES } from './exit-codes.js';

/** What the broker fills in for a topic config that names no retention (72 h, RocketMQ's default). */
const DEFAULT_RETENTION_MS = 72 * 60 * 60 * 1_000;

let broker: CliTestBroker;
let endpoint: string[];

beforeAll(async () => {
  broker = await startCliTestBroker();
  endpoint = ['--endpoint', broker.httpUrl];
});
afterAll(() => broker[Symbol.asyncDispose]());

describe('ricochet topics', () => {
  it('sets a topic, then shows it in ls and get, as tables and as JSON', async () => {
    const set = await cli(['topics', 'set', 'ledger', 'type=fifo', 'maxBacklogMessages=500', ...endpoint]);
    expect(set).toMatchObject({ code: EXIT_CODES.OK, stderr: '' });
    expect(set.stdout).toContain('topic ledger saved');

    const ls = await cli(['topics', 'ls', ...endpoint]);
    expect(ls.code).toBe(EXIT_CODES.OK);
    expect(ls.stdout).toMatch(/^TOPIC\s+TYPE\s+MESSAGES\s+NEXT-OFFSET\s+MAX-BACKLOG$/m);
    expect(ls.stdout).toMatch(/^ledger\s+fifo\s+0\s+0\s+500$/m);

    const get = await cli(['topics', 'get', 'ledger', '--json', ...endpoint]);
    expect(JSON.parse(get.stdout)).toMatchObject({
      name: 'ledger',
      config: { type: 'fifo', maxBacklogMessages: 500 },
      stats: { messages: 0 },
    });
    const listed = JSON.parse((await cli(['topics', 'ls', '--json', ...endpoint])).stdout) as {
      name: string;
    }[];
    expect(listed.map((topic) => topic.name)).toContain('ledger');
  });

  it('changes only the fields named; --replace sends only those', async () => {
    await cli(['topics', 'set', 'audit', 'type=delay', 'maxBacklogMessages=9', ...endpoint]);
    await cli(['topics', 'set', 'audit', 'maxBacklogMessages=10', ...endpoint]);
    const kept = JSON.parse((await cli(['topics', 'get', 'audit', '--json', ...endpoint])).stdout);
    expect(kept.config).toEqual({ type: 'delay', maxBacklogMessages: 10, retentionMs: DEFAULT_RETENTION_MS });

    await cli(['topics', 'set', 'audit', '--replace', '--config', '{"type":"normal"}', ...endpoint]);
    const replaced = JSON.parse((await cli(['topics', 'get', 'audit', '--json', ...endpoint])).stdout);
    expect(replaced.config).toEqual({ type: 'normal', retentionMs: DEFAULT_RETENTION_MS });
  });

  it('shows the broker validation error of a bad config, exits 6, and changes nothing', async () => {
    await cli(['topics', 'set', 'ledger2', 'type=fifo', ...endpoint]);
    const bad = await cli(['topics', 'set', 'ledger2', 'type=ring', ...endpoint]);
    expect(bad.code).toBe(EXIT_CODES.REJECTED);
    expect(bad.stderr).toContain('the broker refused PUT /v1/topics/ledger2: invalid body: type:');
    expect(bad.stderr).toMatch(/^ {2}- type: .+/m);
    const after = JSON.parse((await cli(['topics', 'get', 'ledger2', '--json', ...endpoint])).stdout);
    expect(after.config).toEqual({ type: 'fifo', retentionMs: DEFAULT_RETENTION_MS });
  });

  it('exits 2 with a hint for a topic that does not exist', async () => {
    const run = await cli(['topics', 'get', 'nowhere', ...endpoint]);
    expect(run.code).toBe(EXIT_CODES.NOT_FOUND);
    expect(run.stderr).toBe(
      'error: topic "nowhere" does not exist\nhint: list the topics with `ricochet topics ls`\n',
    );
  });
});

describe('ricochet groups', () => {
  it('sets a group, keeps the fields not named, and lists it with its stats', async () => {
    const set = await cli([
      'groups',
      'set',
      'billing',
      'maxRetries=3',
      'retryPolicy={"type":"fixed","delayMs":500}',
      ...endpoint,
    ]);
    expect(set.code).toBe(EXIT_CODES.OK);
    expect(set.stdout).toMatch(/^retryPolicy:\s+fixed 500ms$/m);
    expect(set.stdout).toMatch(/^maxDeliveriesPerSecond:\s+no limit$/m);
    await cli(['groups', 'set', 'billing', 'startFrom=earliest', 'maxDeliveriesPerSecond=200', ...endpoint]);

    const get = JSON.parse((await cli(['groups', 'get', 'billing', '--json', ...endpoint])).stdout);
    expect(get).toMatchObject({
      name: 'billing',
      config: {
        maxRetries: 3,
        retryPolicy: { type: 'fixed', delayMs: 500 },
        startFrom: 'earliest',
        maxDeliveriesPerSecond: 200,
      },
      stats: { ready: 0, inflight: 0, waitingRetry: 0, dlq: 0, committed: 0 },
    });
    const human = await cli(['groups', 'get', 'billing', ...endpoint]);
    expect(human.stdout).toMatch(/^maxRetries:\s+3 \(then the DLQ after delivery 4\)$/m);
    expect(human.stdout).toMatch(/^maxDeliveriesPerSecond:\s+200\/s$/m);

    const ls = await cli(['groups', 'ls', ...endpoint]);
    expect(ls.stdout).toMatch(
      /^GROUP\s+MODE\s+MAX-RETRIES\s+READY\s+INFLIGHT\s+WAITING-RETRY\s+DLQ\s+COMMITTED\s+PAUSE$/m,
    );
    expect(ls.stdout).toMatch(/^billing\s+clustering\s+3\s+0\s+0\s+0\s+0\s+0\s+-$/m);
  });

  it('shows a stepped or fixed policy’s jitter (X3)', async () => {
    const set = await cli([
      'groups',
      'set',
      'jittery',
      'retryPolicy={"type":"fixed","delayMs":500,"jitter":0.2}',
      ...endpoint,
    ]);
    expect(set.code).toBe(EXIT_CODES.OK);
    expect(set.stdout).toMatch(/^retryPolicy:\s+fixed 500ms, jitter 0\.2$/m);
  });

  it('shows every issue of a bad retry policy, exits 6, and keeps the old config', async () => {
    await cli(['groups', 'set', 'payments', 'maxRetries=2', ...endpoint]);
    const bad = await cli([
      'groups',
      'set',
      'payments',
      '--config',
      '{"maxRetries":-1,"fifo":"yes"}',
      ...endpoint,
    ]);
    expect(bad.code).toBe(EXIT_CODES.REJECTED);
    expect(bad.stderr).toMatch(/^ {2}- maxRetries: /m);
    expect(bad.stderr).toMatch(/^ {2}- fifo: /m);
    const after = JSON.parse((await cli(['groups', 'get', 'payments', '--json', ...endpoint])).stdout);
    expect(after.config).toMatchObject({ maxRetries: 2, fifo: false });
  });

  it('pauses and resumes a group by hand, and shows its pause in get and ls', async () => {
    await cli(['groups', 'set', 'shipping', 'pauseOnFailures={"pauseMs":2000}', ...endpoint]);
    const before = await cli(['groups', 'get', 'shipping', ...endpoint]);
    expect(before.stdout).toMatch(
      /^pauseOnFailures:\s+pause at 90% failures of 20\+ outcomes in 1m, probe after 2s doubling to 5m$/m,
    );
    expect(before.stdout).toMatch(/^pause:\s+delivering · breaker closed · failure ratio 0%$/m);

    const paused = await cli(['groups', 'pause', 'shipping', ...endpoint]);
    expect(paused).toMatchObject({ code: EXIT_CODES.OK, stderr: '' });
    expect(paused.stdout).toContain('group shipping paused');
    expect(paused.stdout).toMatch(/^pause:\s+held \(by hand\) · breaker closed · failure ratio 0%$/m);
    expect((await cli(['groups', 'ls', ...endpoint])).stdout).toMatch(/^shipping\s.*\s+manual$/m);
    const json = JSON.parse((await cli(['groups', 'get', 'shipping', '--json', ...endpoint])).stdout);
    expect(json.pause).toEqual({
      state: 'closed',
      manuallyPaused: true,
      failureRatio: 0,
      counted: { successes: 0, failures: 0 },
    });

    const resumed = await cli(['groups', 'resume', 'shipping', '--json', ...endpoint]);
    expect(resumed.code).toBe(EXIT_CODES.OK);
    expect(JSON.parse(resumed.stdout).pause).toMatchObject({ manuallyPaused: false });
    expect((await cli(['groups', 'ls', ...endpoint])).stdout).toMatch(/^shipping\s.*\s+-$/m);
  });

  it('exits 2 for pausing a group that does not exist, and 1 without a group', async () => {
    const run = await cli(['groups', 'pause', 'nowhere', ...endpoint]);
    expect(run.code).toBe(EXIT_CODES.NOT_FOUND);
    expect(run.stderr).toContain('group "nowhere" does not exist');
    expect((await cli(['groups', 'resume', ...endpoint])).code).toBe(EXIT_CODES.USAGE);
  });

  it('reports a usage error with exit 1 before sending anything', async () => {
    const run = await cli(['groups', 'set', 'payments', 'maxRetries', ...endpoint]);
    expect(run).toMatchObject({ code: EXIT_CODES.USAGE, stdout: '' });
    expect(run.stderr).toContain("expected field=value, got 'maxRetries'");
    expect((await cli(['groups', 'get', ...endpoint])).code).toBe(EXIT_CODES.USAGE);
    expect((await cli(['groups', 'ls', '--frobnicate', ...endpoint])).stderr).toContain(
      "Unknown option '--frobnicate'",
    );
  });
});

describe('ricochet stats', () => {
  it('prints one snapshot when stdout is not a terminal, and JSON with --json', async () => {
    const once = await cli(['stats', ...endpoint]);
    expect(once.code).toBe(EXIT_CODES.OK);
    expect(once.stdout).toMatch(/^TOPIC\s+TYPE\s+MESSAGES\s+SENT\/S$/m);
    expect(once.stdout).toMatch(/^billing\s+0\s+0\s+0\s+0\s+0\s+-\s+-$/m);
    const json = JSON.parse((await cli(['stats', '--json', ...endpoint])).stdout);
    expect(json.groups.map((group: { name: string }) => group.name)).toContain('billing');
    expect(typeof json.at).toBe('string');
  });

  it('refreshes on a terminal until Ctrl-C, then exits 0', async () => {
    const stop = new AbortController();
    const run = startCli(['stats', '--interval-ms', '100', ...endpoint], {
      stdoutIsTTY: true,
      signal: stop.signal,
    });
    // Two screens (each starts by clearing the terminal): the second has rates, measured against the first.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the terminal's clear-screen sequence
    await run.stdout.until(/(\u001b\[H\u001b\[2J[^\u001b]*){2}/);
    stop.abort();
    const done = await run.done;
    expect(done.code).toBe(EXIT_CODES.OK);
    expect(done.stdout).toMatch(/^billing\s+0\s+0\s+0\s+0\s+0\s+0\.0\s+0\.0$/m);
  });
});
