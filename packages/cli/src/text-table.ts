/**
 * Render rows as a table with a header and columns padded to their widest cell. Numbers
 * (right-aligned columns) are named in `rightAligned`. Cells are single-line.
 */
export function renderTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  options: { rightAligned?: readonly number[] } = {},
): string {
  const right = new Set(options.rightAligned ?? []);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => {
        const width = widths[column] ?? 0;
        return right.has(column) ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

/** `key  value` lines, keys padded to the longest. */
export function renderFields(fields: readonly (readonly [string, string])[]): string {
  const width = Math.max(0, ...fields.map(([key]) => key.length));
  return fields.map(([key, value]) => `${`${key}:`.padEnd(width + 1)}  ${value}\n`).join('');
}

/** Cut a cell to `maxLength` characters, marking the cut, and keep it on one line. */
export function truncateCell(text: string, maxLength: number): string {
  const oneLine = text.replace(/\s+/g, ' ');
  return oneLine.length <= maxLength ? oneLine : `${oneLine.slice(0, Math.max(0, maxLength - 1))}…`;
}
