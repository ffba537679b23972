import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BROKER_SRC, brokerSourceFiles, importsOf } from './import-graph.js';
import { fencedBlocks, readDoc } from './markdown.js';

/**
 * docs/architecture.md draws every broker source file in its module map, and only real imports
 * as arrows: the map follows the folders, or this test fails.
 */
const moduleMap = fencedBlocks(readDoc('docs/architecture.md')).find(
  (block) => block.info === 'mermaid' && block.headings[2] === 'Module map',
);

/** Node id → the file it names (path from apps/broker/src, no extension). */
function nodesOf(diagram: string): Map<string, string> {
  const nodes = new Map<string, string>();
  for (const line of diagram.split('\n')) {
    if (/^\s*subgraph\b/.test(line)) continue;
    const node = /^\s*(\w+)\["([^"]+)"\]\s*$/.exec(line);
    if (node?.[1] && node[2]) nodes.set(node[1], node[2]);
  }
  return nodes;
}

function edgesOf(diagram: string): [string, string][] {
  return [...diagram.matchAll(/^\s*(\w+)\s*-->\s*(\w+)\s*$/gm)].map((match) => [
    match[1] ?? '',
    match[2] ?? '',
  ]);
}

const fileOf = (name: string) => join(BROKER_SRC, `${name}.ts`);

describe('docs/architecture.md module map', () => {
  it('is there', () => {
    expect(moduleMap?.body).toContain('flowchart');
  });

  it('names every broker source file, and nothing else', () => {
    const drawn = [...nodesOf(moduleMap?.body ?? '').values()].sort();
    const files = brokerSourceFiles()
      .map((file) => relative(BROKER_SRC, file).replace(/\.ts$/, ''))
      .sort();
    expect(drawn).toEqual(files);
  });

  it('draws only arrows that are real imports', () => {
    const nodes = nodesOf(moduleMap?.body ?? '');
    const edges = edgesOf(moduleMap?.body ?? '');
    expect(edges.length).toBeGreaterThan(10);
    const notImports = edges.filter(([from, to]) => {
      const source = nodes.get(from);
      const target = nodes.get(to);
      return !source || !target || !importsOf(fileOf(source)).includes(fileOf(target));
    });
    expect(notImports.map(([from, to]) => `${from} --> ${to}`)).toEqual([]);
  });
});
