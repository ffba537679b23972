import { readFileSync } from 'node:fs';
import { repoPath } from './repo-root.js';

/** A markdown file of the repository, by its path from the root. */
export function readDoc(path: string): string {
  return readFileSync(repoPath(path), 'utf8');
}

/** A fenced code block and where it sits in its document. */
export interface FencedBlock {
  /** The info string after the opening fence, e.g. `hex` or `mermaid`. */
  readonly info: string;
  readonly body: string;
  /** The headings the block sits under, by level: `headings[1]` is the current `##` heading. */
  readonly headings: readonly (string | undefined)[];
  /** The 1-based line of the opening fence, so a failure points at the block. */
  readonly line: number;
}

/** Every ``` fenced block of a markdown document, in order. */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  const headings: (string | undefined)[] = [];
  let open: { info: string; line: number; headings: (string | undefined)[]; lines: string[] } | undefined;
  for (const [index, line] of markdown.split('\n').entries()) {
    if (open !== undefined) {
      if (/^```\s*$/.test(line)) {
        blocks.push({
          info: open.info,
          body: open.lines.join('\n'),
          headings: open.headings,
          line: open.line,
        });
        open = undefined;
      } else {
        open.lines.push(line);
      }
      continue;
    }
    const fence = /^```(\S*)\s*$/.exec(line);
    if (fence) {
      open = { info: fence[1] ?? '', line: index + 1, headings: [...headings], lines: [] };
      continue;
    }
    // Headings are tracked only outside fences: a `#` line inside a code block is not a heading.
    const heading = /^(#{1,6})\s+(.*?)\s*$/.exec(line);
    if (heading?.[1] !== undefined && heading[2] !== undefined) {
      const level = heading[1].length;
      headings.length = level - 1;
      headings[level - 1] = heading[2];
    }
  }
  if (open !== undefined) throw new Error(`unclosed code fence at line ${open.line}`);
  return blocks;
}

/** The cells of one table row, splitting on `|` but not on an escaped `\|`. */
function cellsOf(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
}

/**
 * The body rows of the one table whose header row has exactly `header` as its cells. Throws when
 * there is no such table or more than one, so a renamed column fails loudly instead of matching nothing.
 */
export function tableRows(markdown: string, header: readonly string[]): string[][] {
  const lines = markdown.split('\n');
  const isHeader = (line: string) => line.startsWith('|') && cellsOf(line).join('|') === header.join('|');
  const starts = lines.flatMap((line, index) => (isHeader(line) ? [index] : []));
  const start = starts[0];
  if (start === undefined || starts.length > 1) {
    throw new Error(`expected one table with header | ${header.join(' | ')} |, found ${starts.length}`);
  }
  if (!/^\|[\s|:-]+\|$/.test(lines[start + 1] ?? '')) {
    throw new Error(`the table | ${header.join(' | ')} | has no separator row`);
  }
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(cellsOf(line));
  }
  return rows;
}
