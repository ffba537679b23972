import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NEWER_SYNTAX, type NodeRun, runNode } from './support/node-process.js';

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

/** How long `node --test` may take: it starts Node and tsx and a broker per test; busy CI is slow. */
const RUN_BUDGET_MS = 60_000;

/** Run `node <args>` in `examples/testing/`, killed after `budgetMs`. */
function runNodeHere(args: readonly string[], budgetMs: number): Promise<NodeRun> {
  return runNode(args, { cwd: EXAMPLES_DIR, budgetMs });
}

describe('examples/testing: tests written with @ricochet/testing', () => {
  it('has node:test examples', () => {
    expect(NODE_TESTS.length).toBeGreaterThan(0);
  });

  it.each(NODE_TESTS)('%s is plain JavaScript that Node 20.19 parses', async (file) => {
    const check = await runNodeHere(['--check', file], 10_000);
    expect(check.code, check.stderr).toBe(0);
    const source = readFileSync(join(EXAMPLES_DIR, file), 'utf8');
    for (const { name, pattern } of NEWER_SYNTAX) {
      expect(pattern.test(source), `${file} uses ${name}, which Node 20.19 lacks`).toBe(false);
    }
  });

  it('passes under node --test', { timeout: RUN_BUDGET_MS + 10_000 }, async ({ annotate }) => {
    // The workspace packages' TypeScript source, through tsx: CI has no dist/.
    const run = await runNodeHere(
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
