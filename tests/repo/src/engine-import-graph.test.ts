import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, repoPath } from './repo-root.js';
import { listTypeScriptFiles } from './workspace-packages.js';

/**
 * Issue 9: the broker's modules call each other in one direction only. The import graph of
 * `apps/broker/src` (type-only imports included: a type cycle is a design cycle too; tests and
 * test support left out) must have no cycle, so no module can call back into one that calls it.
 */
const BROKER_SRC = repoPath('apps/broker/src');

function isSource(file: string): boolean {
  return !file.endsWith('.test.ts') && !file.endsWith('.test-support.ts');
}

/** Relative imports of a file, resolved to the files they name. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const targets: string[] = [];
  for (const match of text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"](\.[^'"]+)['"]/gm)) {
    const specifier = match[1] ?? '';
    targets.push(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
  }
  return targets;
}

/** Every cycle's files, each cycle once, found by depth-first search. */
function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

describe('the broker import graph', () => {
  const files = listTypeScriptFiles(BROKER_SRC).filter(isSource);
  const graph = new Map(
    files.map((file) => [file, importsOf(file).filter((target) => files.includes(target))]),
  );

  it('reads the engine (a check that finds nothing to read is no check)', () => {
    const engine = files.filter((file) => file.includes(`${join('src', 'engine')}`));
    expect(engine.length).toBeGreaterThan(20);
    expect(graph.get(join(BROKER_SRC, 'engine', 'broker-engine.ts'))?.length).toBeGreaterThan(10);
  });

  it('has no cycle', () => {
    const cycles = findCycles(graph).map((cycle) =>
      cycle.map((file) => relative(REPO_ROOT, file)).join(' → '),
    );
    expect(cycles).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    const looped = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(findCycles(looped)).toEqual([['a', 'b', 'c', 'a']]);
  });
});
