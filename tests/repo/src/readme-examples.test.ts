import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fencedBlocks, readDoc } from './markdown.js';
import { repoPath } from './repo-root.js';

/**
 * The README shows the programs of `examples/` (which the contract tests run) exactly as they are:
 * a block that stands for one has `<!-- example: <file> -->` on the line right above its fence.
 */
const MARKER = /^<!-- example: ([\w.-]+) -->$/;

const README = 'README.md';
const readme = readDoc(README);
const readmeLines = readme.split('\n');
const blocks = fencedBlocks(readme);

const EXAMPLES = readdirSync(repoPath('examples'))
  .filter((file) => file.endsWith('.mjs') && file !== 'run.mjs')
  .sort();

/** Every line that starts like a marker, well-formed or not, with the block right below it. */
const markers = readmeLines.flatMap((text, index) => {
  if (!/^\s*<!--\s*example/.test(text)) return [];
  const line = index + 1;
  return [
    {
      line,
      file: MARKER.exec(text.trim())?.[1],
      block: blocks.find((block) => block.line === line + 1),
    },
  ];
});

describe('README.md shows the examples as they are in examples/', () => {
  it('marks blocks with well-formed markers, each right above a ```js fence', () => {
    const bad = markers
      .filter((marker) => marker.file === undefined || marker.block?.info !== 'js')
      .map((marker) => `${README}:${marker.line}`);
    expect(bad, 'expected `<!-- example: <file>.mjs -->` directly above a ```js block').toEqual([]);
  });

  it('shows every example exactly once, and no file that is not one', () => {
    const shown = markers.map((marker) => marker.file).sort();
    expect(shown).toEqual(EXAMPLES);
  });

  it.each(EXAMPLES)('shows %s character for character', (file) => {
    const marker = markers.find((candidate) => candidate.file === file);
    const source = readFileSync(repoPath('examples', file), 'utf8');
    // A fenced block cannot hold the file's final newline; everything else must be equal.
    expect(
      marker?.block?.body,
      `${README}:${marker?.line ?? '?'}: copy examples/${file} into its block (or the other way round)`,
    ).toBe(source.replace(/\n$/, ''));
  });

  it.each(EXAMPLES)('%s says how to run it', (file) => {
    const source = readFileSync(repoPath('examples', file), 'utf8');
    expect(source).toContain(`Run: pnpm example ${file.replace(/\.mjs$/, '')}`);
  });

  it('has no other code block that uses a Ricochet client, since only the examples are run', () => {
    const marked = new Set(markers.map((marker) => marker.block));
    const unmarked = blocks
      .filter((block) => !marked.has(block) && /from '@ricochet\//.test(block.body))
      .map((block) => `${README}:${block.line}`);
    expect(unmarked).toEqual([]);
  });
});
