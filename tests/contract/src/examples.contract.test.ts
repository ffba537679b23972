import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from './support/closed-port.js';
import { NEWER_SYNTAX, type NodeRun, runNode } from './support/node-process.js';
import { startBroker, type TestBroker } from './support/test-broker.js';

/**
 * The programs of `examples/`, which the README shows as they are, run as a user runs them: a
 * separate Node process against a real broker, twice (a second run against the same broker must
 * work too), checked on what they print. Each is first parsed by plain Node, without a loader, so
 * syntax Node 20.19 lacks fails here: tsx would quietly compile it away.
 */

const require = createRequire(import.meta.url);
const EXAMPLES_DIR = dirname(require.resolve('@ricochet/examples/package.json'));
const RUNNER = 'run.mjs';

/** Every example, found on disk so that a new one cannot be forgotten here. */
const EXAMPLES = readdirSync(EXAMPLES_DIR)
  .filter((file) => file.endsWith('.mjs') && file !== RUNNER)
  .sort();

/** A message id, captured: a later line of the same output refers back to it as `\1`. */
const ID = '([0-9a-f]{32})';
/** A message id as Apache's RocketMQ clients make them: 34 upper-case hex digits. */
const ROCKETMQ_ID = '([0-9A-F]{34})';

/**
 * What each example prints on stdout: one regular expression per line, in order, and nothing else.
 * An example's lines are joined into one expression, so `\1` on a later line is the id an earlier
 * line captured. A new example needs its entry here.
 */
const EXPECTED_OUTPUT: Readonly<Record<string, readonly string[]>> = {
  'broadcast.mjs': [
    // The two instances are served independently: their lines interleave in any order.
    String.raw`cache-(?:eu|us) got SKU-[12] = \d+\.\d+ \(delivery 1\)`,
    String.raw`cache-(?:eu|us) got SKU-[12] = \d+\.\d+ \(delivery 1\)`,
    String.raw`cache-(?:eu|us) got SKU-[12] = \d+\.\d+ \(delivery 1\)`,
    String.raw`cache-(?:eu|us) got SKU-[12] = \d+\.\d+ \(delivery 1\)`,
    'cache-eu: SKU-1 = 9.99, SKU-2 = 24.50',
    'cache-us: SKU-1 = 9.99, SKU-2 = 24.50',
  ],
  'dead-letter-queue.mjs': [
    'delivery 1: the warehouse is down, FAILURE',
    'delivery 2: the warehouse is down, FAILURE',
    `in %DLQ%shipping: ${ID}, 2 attempts, reason: the listener returned FAILURE`,
    'redriven: 1',
    String.raw`delivery 1: shipped \{"orderId":1042\}`,
  ],
  'delay-message.mjs': [
    `sent ${ID} with delayMs 2000`,
    // At least 2000 ms: a four-digit number from 2000, or any longer one.
    String.raw`received \1 (?:[2-9]\d{3}|[1-9]\d{4,}) ms after the send: \{"customerId":7,"plan":"pro"\}`,
  ],
  'fifo.mjs': [
    String.raw`acct-A A1 \(delivery 1\): FAILURE, so acct-A waits`,
    String.raw`acct-B B1 \(delivery 1\): done`,
    String.raw`acct-B B2 \(delivery 1\): done`,
    String.raw`acct-A A1 \(delivery 2\): done`,
    String.raw`acct-A A2 \(delivery 1\): done`,
    String.raw`acct-A A3 \(delivery 1\): done`,
    'processed in this order: B1 B2 A1 A2 A3',
  ],
  'push-with-retries.mjs': [
    `delivery 1 of ${ID}: returning FAILURE`,
    String.raw`delivery 2 of \1: throwing`,
    '  the listener threw: the card gateway timed out',
    String.raw`delivery 3 of \1: charged \{"orderId":1042,"amountCents":4200\}`,
  ],
  'rocketmq-client.mjs': [
    String.raw`sent ${ROCKETMQ_ID} at offset \d+`,
    String.raw`received \1, tag created, deliveryAttempt 1`,
    String.raw`  body: \{"orderId":1042\}`,
    String.raw`acked \1`,
  ],
  'send-and-receive.mjs': [
    String.raw`sent ${ID} to orders at offset \d+`,
    String.raw`received \1, tag created, deliveryAttempt 1`,
    String.raw`  body: \{"orderId":1042\}`,
    String.raw`acked \1`,
  ],
};

/** How long one run of an example may take before it is killed: generous, CI machines are busy. */
const RUN_BUDGET_MS = 30_000;
/** The budget of a test that runs an example: the run's, plus starting Node and tsx. */
const TEST_TIMEOUT_MS = RUN_BUDGET_MS + 10_000;

/** Run `node <args>` in `examples/`, killed after `budgetMs`. */
function runInExamples(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  budgetMs = RUN_BUDGET_MS,
): Promise<NodeRun> {
  return runNode(args, { cwd: EXAMPLES_DIR, env, budgetMs });
}

/** Run an example as `pnpm example` does, with the workspace packages' TypeScript source (CI has no dist/). */
function runExample(file: string, endpoint: string, grpcEndpoint?: string): Promise<NodeRun> {
  return runInExamples(['--conditions=@ricochet/source', '--import', 'tsx', RUNNER, file], {
    RICOCHET_ENDPOINT: endpoint,
    ...(grpcEndpoint === undefined ? {} : { RICOCHET_GRPC_ENDPOINT: grpcEndpoint }),
  });
}

/** One regular expression for a whole output: the lines, in order, and nothing else. */
function wholeOutput(lines: readonly string[]): RegExp {
  return new RegExp(`^${lines.join('\n')}\n$`);
}

function describeRun(run: NodeRun): string {
  return `exit ${run.code ?? run.signal} after ${run.elapsedMs} ms\n--- stdout\n${run.stdout}--- stderr\n${run.stderr}`;
}

describe('examples/: the README’s programs', () => {
  it('finds the examples, and has the expected output of each, and of nothing else', () => {
    expect(EXAMPLES.length).toBeGreaterThan(0);
    expect(Object.keys(EXPECTED_OUTPUT).sort()).toEqual(EXAMPLES);
  });

  it.each([...EXAMPLES, RUNNER])('%s is plain JavaScript that Node 20.19 parses', async (file) => {
    const check = await runInExamples(['--check', file], {}, 10_000);
    expect(check.code, describeRun(check)).toBe(0);
    const source = readFileSync(join(EXAMPLES_DIR, file), 'utf8');
    for (const { name, pattern } of NEWER_SYNTAX) {
      expect(pattern.test(source), `${file} uses ${name}, which Node 20.19 lacks`).toBe(false);
    }
  });

  it('run.mjs names the examples when asked for one that does not exist', async () => {
    const run = await runInExamples([RUNNER, 'no-such-example'], {}, 10_000);
    expect(run.code, describeRun(run)).toBe(2);
    expect(run.stderr).toContain("There is no example 'no-such-example'.");
    for (const file of EXAMPLES) expect(run.stderr).toContain(`  ${file.slice(0, -'.mjs'.length)}\n`);
  });

  it('run.mjs says how to start a broker when none answers', async () => {
    const endpoint = `ws://127.0.0.1:${await closedPort()}`;
    const run = await runInExamples([RUNNER, EXAMPLES[0] ?? ''], { RICOCHET_ENDPOINT: endpoint }, 10_000);
    expect(run.code, describeRun(run)).toBe(1);
    expect(run.stderr).toContain(`No broker answers at ${endpoint}.`);
    expect(run.stderr).toContain('pnpm start');
  });
});

describe('examples/ against a real broker', () => {
  // One broker for all, as a user runs them: each example must cope with what the others left.
  let broker: TestBroker;
  beforeAll(async () => {
    // With the RocketMQ endpoint too, for the example of Apache's client (`--grpc-port`).
    broker = await startBroker({ grpcPort: 0 });
  });
  afterAll(async () => {
    await broker?.close();
  });

  describe.each(EXAMPLES)('%s', (file) => {
    const expected = EXPECTED_OUTPUT[file];

    it.each(['first', 'second'])(
      'exits 0 and prints what it should, on its %s run',
      { timeout: TEST_TIMEOUT_MS },
      async () => {
        if (expected === undefined) throw new Error(`no expected output for ${file} in EXPECTED_OUTPUT`);
        const run = await runExample(file, broker.endpoint, `127.0.0.1:${broker.broker.address?.grpcPort}`);
        expect(run.code, describeRun(run)).toBe(0);
        expect(run.stdout, describeRun(run)).toMatch(wholeOutput(expected));
        expect(run.stderr, describeRun(run)).toBe('');
      },
    );
  });

  // The README says the producer and simple consumer run unchanged over http://.
  it('send-and-receive.mjs runs unchanged over the HTTP transport', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const run = await runExample('send-and-receive.mjs', broker.endpoint.replace(/^ws/, 'http'));
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stdout, describeRun(run)).toMatch(wholeOutput(EXPECTED_OUTPUT['send-and-receive.mjs'] ?? []));
    expect(run.stderr, describeRun(run)).toBe('');
  });
});
