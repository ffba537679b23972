import { relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BROKER_SRC, brokerSourceFiles, importsOf } from './import-graph.js';
import { fencedBlocks, readDoc } from './markdown.js';

/**
 * docs/architecture.md draws one small map per folder of the broker, under a heading that names the
 * folder (`` `engine/model/` ``, `` `apps/broker/src/` `` for the loose files): every source file
 * of the folder is a node of its map, by its name, and nothing else is but other folders (a label
 * ending in `/`, from `apps/broker/src`). An arrow is a real import: from a module, or a file in a
 * folder, to a module, or a file in a folder. The maps follow the folders, or this test fails.
 */

/** Paths from `apps/broker/src`, `/`-separated, no extension; the folder of the loose files is `''`. */
const nameOf = (file: string) => relative(BROKER_SRC, file).split(sep).join('/').replace(/\.ts$/, '');
const folderOf = (name: string) => (name.includes('/') ? name.slice(0, name.lastIndexOf('/')) : '');

/** The maps, by folder: each mermaid flowchart under a heading whose first code span is a folder. */
function folderMaps(): Map<string, string> {
  const maps = new Map<string, string>();
  for (const block of fencedBlocks(readDoc('docs/architecture.md'))) {
    if (block.info !== 'mermaid' || !block.body.trimStart().startsWith('flowchart')) continue;
    const heading = block.headings.findLast((text) => text !== undefined) ?? '';
    const folder = /^`([^`]*\/)`/.exec(heading)?.[1];
    if (folder === undefined) continue;
    const key = folder === 'apps/broker/src/' ? '' : folder.replace(/\/$/, '');
    if (maps.has(key)) throw new Error(`two maps of ${folder}`);
    maps.set(key, block.body);
  }
  return maps;
}

/** A map's nodes: id → a module's path, or a folder's path ending in `/`. */
function nodesOf(folder: string, diagram: string): Map<string, string> {
  const nodes = new Map<string, string>();
  for (const line of diagram.split('\n')) {
    const node = /^\s*(\w+)\["([^"]+)"\]\s*$/.exec(line);
    if (!node?.[1] || !node[2]) continue;
    const label = node[2];
    nodes.set(node[1], label.endsWith('/') ? label : folder === '' ? label : `${folder}/${label}`);
  }
  return nodes;
}

function edgesOf(diagram: string): [string, string][] {
  return [...diagram.matchAll(/^\s*(\w+)\s*-->\s*(\w+)\s*$/gm)].map((match) => [
    match[1] ?? '',
    match[2] ?? '',
  ]);
}

const files = brokerSourceFiles();
const modules = files.map(nameOf);

/** The source files a node stands for: a module, or every file under a folder. */
const filesOf = (node: string) =>
  node.endsWith('/')
    ? files.filter((file) => nameOf(file).startsWith(node))
    : files.filter((file) => nameOf(file) === node);

/** The arrows of `maps` that are no import, and the nodes that name no file, one line each. */
function falseDrawings(maps: ReadonlyMap<string, string>): string[] {
  const wrong: string[] = [];
  for (const [folder, diagram] of maps) {
    const nodes = nodesOf(folder, diagram);
    for (const node of nodes.values()) if (filesOf(node).length === 0) wrong.push(`${folder}/: no ${node}`);
    for (const [from, to] of edgesOf(diagram)) {
      const sources = filesOf(nodes.get(from) ?? '');
      const targets = new Set(filesOf(nodes.get(to) ?? ''));
      if (!sources.some((file) => importsOf(file).some((target) => targets.has(target)))) {
        wrong.push(`${folder}/: ${from} --> ${to}`);
      }
    }
  }
  return wrong;
}

describe('docs/architecture.md folder maps', () => {
  const maps = folderMaps();

  it('has one map for every folder of the broker, and none for a folder that is not', () => {
    const folders = [...new Set(modules.map(folderOf))].sort();
    expect(folders.length).toBeGreaterThan(10);
    expect([...maps.keys()].sort()).toEqual(folders);
  });

  it("names every source file in its folder's map, and no other module", () => {
    for (const [folder, diagram] of maps) {
      const drawn = [...nodesOf(folder, diagram).values()].filter((node) => !node.endsWith('/')).sort();
      expect(drawn, `the map of ${folder}/`).toEqual(
        modules.filter((module) => folderOf(module) === folder).sort(),
      );
    }
  });

  it('keeps each map small', () => {
    for (const [folder, diagram] of maps) {
      expect(nodesOf(folder, diagram).size, `the map of ${folder}/`).toBeLessThanOrEqual(25);
    }
  });

  it('draws only folders that exist, and arrows that are real imports', () => {
    expect(falseDrawings(maps)).toEqual([]);
    const arrows = [...maps.values()].reduce((sum, diagram) => sum + edgesOf(diagram).length, 0);
    expect(arrows).toBeGreaterThan(50);
  });

  it('fails an arrow that is no import, and a node that names no file', () => {
    const drawn = new Map([
      ['', 'flowchart LR\n  config["config"]\n  app["app"]\n  app --> config\n  config --> app'],
      ['engine', 'flowchart LR\n  gone["no-such-module"]\n  model["engine/model/"]\n  model --> gone'],
    ]);
    expect(falseDrawings(drawn)).toEqual([
      '/: config --> app',
      'engine/: no engine/no-such-module',
      'engine/: model --> gone',
    ]);
  });
});
