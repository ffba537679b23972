/** How a message body is shown: as it decodes best, or as the user picks. */
export type PreviewMode = 'json' | 'text' | 'hex';

export function decodeBase64(base64: string): Uint8Array {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The body as UTF-8 text, or `undefined` when it is not valid UTF-8 or holds control bytes. */
export function asText(bytes: Uint8Array): string | undefined {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
  // Tabs and line breaks are text; other C0 controls mean binary.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for exactly those bytes
  return /[\u0000-\u0008\u000e-\u001f\u007f]/.test(text) ? undefined : text;
}

/** The body pretty-printed, when it is a JSON object or array. */
export function asJson(bytes: Uint8Array): string | undefined {
  const text = asText(bytes);
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return undefined;
  try {
    return JSON.stringify(JSON.parse(trimmed), null, 2);
  } catch {
    return undefined;
  }
}

/** A hex dump: offset, 16 bytes in hex, and those bytes as ASCII. */
export function asHex(bytes: Uint8Array, maxBytes = 4_096): string {
  const lines: string[] = [];
  const shown = Math.min(bytes.length, maxBytes);
  for (let offset = 0; offset < shown; offset += 16) {
    const row = [...bytes.subarray(offset, Math.min(offset + 16, shown))];
    const hex = row.map((byte) => byte.toString(16).padStart(2, '0')).join(' ');
    const ascii = row.map((byte) => (byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : '.')).join('');
    lines.push(`${offset.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
  }
  if (bytes.length > shown) lines.push(`… ${bytes.length - shown} more bytes`);
  return lines.join('\n');
}

/** The best way to show a body: JSON if it is JSON, text if it is text, else hex. */
export function bestMode(bytes: Uint8Array): PreviewMode {
  if (asJson(bytes) !== undefined) return 'json';
  return asText(bytes) === undefined ? 'hex' : 'text';
}

/** The body shown in `mode`; a mode it cannot be shown in falls back to hex. */
export function preview(bytes: Uint8Array, mode: PreviewMode): string {
  if (mode === 'json') return asJson(bytes) ?? asHex(bytes);
  if (mode === 'text') return asText(bytes) ?? asHex(bytes);
  return asHex(bytes);
}
