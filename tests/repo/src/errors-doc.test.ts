import { ERROR_CODES } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { readDoc, tableRows } from './markdown.js';

interface DocumentedError {
  readonly name: string;
  readonly code: number;
  readonly retryable: boolean;
}

/** A row must parse completely: a typo fails the test instead of silently dropping the row. */
function parseRow(cells: readonly string[]): DocumentedError {
  const [nameCell = '', codeCell = '', retryableCell = '', meaning = ''] = cells;
  const name = /^`([A-Z][A-Z0-9_]*)`$/.exec(nameCell)?.[1];
  if (
    cells.length !== 4 ||
    name === undefined ||
    !/^\d+$/.test(codeCell) ||
    !/^(yes|no)$/.test(retryableCell) ||
    meaning === ''
  ) {
    throw new Error(`malformed row in docs/protocol/errors.md: | ${cells.join(' | ')} |`);
  }
  return { name, code: Number(codeCell), retryable: retryableCell === 'yes' };
}

const documented = tableRows(readDoc('docs/protocol/errors.md'), [
  'name',
  'code',
  'retryable',
  'meaning',
]).map(parseRow);
const catalogue = Object.entries(ERROR_CODES).map(([name, { code, retryable }]) => ({
  name,
  code,
  retryable,
}));

const byName = (errors: readonly DocumentedError[]) =>
  Object.fromEntries(errors.map(({ name, code, retryable }) => [name, { code, retryable }]));

describe('docs/protocol/errors.md', () => {
  it('has no duplicate names or codes', () => {
    const names = documented.map((error) => error.name);
    const codes = documented.map((error) => error.code);
    expect(names.filter((name, index) => names.indexOf(name) !== index)).toEqual([]);
    expect(codes.filter((code, index) => codes.indexOf(code) !== index)).toEqual([]);
  });

  it('documents every catalogue entry', () => {
    const documentedNames = new Set(documented.map((error) => error.name));
    expect(catalogue.filter((error) => !documentedNames.has(error.name)).map((error) => error.name)).toEqual(
      [],
    );
  });

  it('documents nothing that is not in the catalogue', () => {
    expect(documented.filter((error) => !(error.name in ERROR_CODES)).map((error) => error.name)).toEqual([]);
  });

  it('gives every error the code and retryable flag of the catalogue', () => {
    expect(byName(documented)).toEqual(byName(catalogue));
  });
});
