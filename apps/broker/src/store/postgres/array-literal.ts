import type { Column, RowValues } from './postgres-tables.js';

/**
 * One column of a batch's rows as a PostgreSQL array in its text form (`{"a","b"}`), the one
 * parameter a statement takes per column (`write-batch.ts`).
 *
 * Built here rather than by postgres.js, whose generic array serializer runs two regular
 * expressions over every element and then the driver's per-value serializer: on a batch of a few
 * thousand rows that was most of a 20–30 ms event-loop task. postgres.js passes a string parameter
 * through unchanged, and the statement's `$n::type[]` cast parses it on the server.
 */
export function arrayLiteral(column: Column, rows: readonly RowValues[], index: number): string {
  const parts = new Array<string>(rows.length);
  for (let row = 0; row < rows.length; row++) parts[row] = element(column, rows[row]?.[index]);
  return `{${parts.join(',')}}`;
}

function element(column: Column, value: RowValues[number] | undefined): string {
  switch (column.type) {
    case 'bigint':
      return String(value);
    case 'text':
      return quotedText(String(value));
    case 'bytea': {
      const bytes = value as Uint8Array;
      const buffer = Buffer.isBuffer(bytes)
        ? bytes
        : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      // Quoted `\\x…`: the array parser turns `\\` into the `\x` that starts bytea's hex form.
      return `"\\\\x${buffer.toString('hex')}"`;
    }
  }
}

/**
 * A text element, always quoted (so empty strings, `NULL`, spaces, commas and braces stay text);
 * inside the quotes only `\` and `"` are escaped, with a backslash.
 */
function quotedText(text: string): string {
  if (!text.includes('\\') && !text.includes('"')) return `"${text}"`;
  return `"${text.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}
