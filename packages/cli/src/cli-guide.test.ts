import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes.js';

/** docs/guides/cli.md must list the exit codes the CLI has, and show every command. */
const guide = readFileSync(new URL('../../../docs/guides/cli.md', import.meta.url), 'utf8');

describe('docs/guides/cli.md', () => {
  it('has the exit code table of EXIT_CODES, row for row', () => {
    const rows = [...guide.matchAll(/^\| (\d+) \| ([a-z ]+) \|/gm)].map((match) => [
      Number(match[1]),
      match[2],
    ]);
    const expected = Object.entries(EXIT_CODES).map(([name, code]) => [
      code,
      name.toLowerCase().replace('_', ' '),
    ]);
    expect(rows).toEqual(expected);
  });

  it.each([
    'topics ls',
    'topics get',
    'topics set',
    'groups ls',
    'groups get',
    'groups set',
    'groups pause',
    'groups resume',
    'events',
    'dlq ls',
    'dlq show',
    'dlq redrive',
    'messages get',
    'send',
    'tail',
    'stats',
    'cluster',
  ])('shows `ricochet %s` in an example', (command) => {
    expect(guide).toMatch(new RegExp(`^ricochet ${command}\\b`, 'm'));
  });
});
