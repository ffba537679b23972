import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BROKER_SRC, brokerSourceFiles, importGraph } from './import-graph.js';
import { REPO_ROOT } from './repo-root.js';

/**
 * Issue 9: the broker's modules call each other in one direction only. The import graph of
 * `apps/broker/src` (type-only imports included: a type cycle is a design cycle too; tests and
 * test support left out) must have no cycle, so no module can call back into one that calls it.
 */

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
  const files = brokerSourceFiles();
  const graph = importGraph(files);

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
