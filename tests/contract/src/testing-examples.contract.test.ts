import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * `examples/testing/`: tests written with @ricochet/testing, as a user writes them. The vitest
 * ones run as a project of this repository's vitest run (`testing-examples`); the node:test ones
 * run here, as a user runs them: `node --test` in a process of its own, each file first parsed by
 * plain Node, since tsx would quietly compile syntax Node 20.19 lacks.
 */

const require = createRequire(import.meta.url);
const EXAMPLES_DIR = dirname(require.resolve('@ricochet/testing-examples/package.json'));
const NODE_TEST_DIR = 'node-test';
const NODE_TESTS = readdirSync(join(EXAMPLES_DIR, NODE_TEST_DIR))
  .filter((file) => file.endsWith('.test.mjs'))
  .sort()
  .map((file) => `${NODE_TEST_DIR}/${file}`);

/** Syntax `node --check` accepts on a Node newer than 20.19, listed so the check holds on any Node. */
const NEWER_SYNTAX: readonly { readonly name: string; readonly pattern: RegExp }[] = [
  { name: '`using` / `await using` declarations', pattern: /^\s*(?:await\s+)?using\s+[\w$[{]/m },
  { name: 'decorators', pattern: /^\s*@[\w$]/m },
];

/** How long `node --test` may take: it starts Node and tsx and a broker per test; busy CI is slow. */
const RUN_BUDGET_MS = 60_000;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Children still running, each stopped by its own handle after every test. */
const running = new Set<ChildProcess>();

afterEach(async () => {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once('close', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
  running.clear();
});

/** Run `node <args>` in `examples/testing/`, killed after `budgetMs`. */
function runNode(args: readonly string[], budgetMs: number): Promise<Run> {
  // NODE_OPTIONS from the test's own environment must not reach the child: the check is of plain Node.
  const { NODE_OPTIONS: _ignored, ...env } = process.env;
  const child = spawn(process.execPath, args, { cwd: EXAMPLES_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const killer = setTimeout(() => {
    stderr += `\n[killed after ${budgetMs} ms]`;
    child.kill('SIGKILL');
  }, budgetMs);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(killer);
      running.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('examples/testing: tests written with @ricochet/testing', () => {
  it('has node:test examples', () => {
    expect(NODE_TESTS.length).toBeGreaterThan(0);
  });

  it.each(NODE_TESTS)('%s is plain JavaScript that Node 20.19 parses', async (file) => {
    const check = await runNode(['--check', file], 10_000);
    expect(check.code, check.stderr).toBe(0);
    const source = readFileSync(join(EXAMPLES_DIR, file), 'utf8');
    for (const { name, pattern } of NEWER_SYNTAX) {
      expect(pattern.test(source), `${file} uses ${name}, which Node 20.19 lacks`).toBe(false);
    }
  });

  it('passes under node --test', { timeout: RUN_BUDGET_MS + 10_000 }, async ({ annotate }) => {
    // The workspace packages' TypeScript source, through tsx: CI has no dist/.
    const run = await runNode(
      ['--conditions=@ricochet/source', '--import', 'tsx', '--test', '--test-reporter=tap', ...NODE_TESTS],
      RUN_BUDGET_MS,
    );
    const shown = `exit ${run.code}\n--- stdout\n${run.stdout}--- stderr\n${run.stderr}`;
    expect(run.code, shown).toBe(0);
    expect(run.stdout, shown).toMatch(/^# pass [1-9]\d*$/m);
    expect(run.stdout, shown).toMatch(/^# fail 0$/m);
    expect(run.stdout, shown).not.toMatch(/^\s*not ok/m);
    // What the schedule walk measured, passed on (measured, not asserted: CI machines are busy).
    const measured = /^# (4 h 45 min 40 s of retries in \d+ ms of real time)$/m.exec(run.stdout)?.[1];
    if (measured) await annotate(`node:test example: ${measured}`);
  });
});
