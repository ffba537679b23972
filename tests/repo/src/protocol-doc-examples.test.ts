import { Buffer } from 'node:buffer';
import { readdirSync } from 'node:fs';
import { clientFrameSchema, decodeFrame, encodeFrame, frameSchema } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { fencedBlocks, readDoc, tableRows } from './markdown.js';
import { repoPath } from './repo-root.js';

const FRAME_TYPES: readonly string[] = frameSchema.options.map((option) => option.shape.type.value);
const CLIENT_FRAME_TYPES: readonly string[] = clientFrameSchema.options.map(
  (option) => option.shape.type.value,
);

/** A ```hex block, the frame name of the `## \`name\`` section it sits in, and the ```json after it. */
interface HexExample {
  readonly where: string;
  readonly file: string;
  readonly frameName: string | undefined;
  readonly hex: string;
  readonly json: string | undefined;
}

function hexExamplesOf(file: string): HexExample[] {
  const blocks = fencedBlocks(readDoc(`docs/protocol/${file}`));
  return blocks.flatMap((block, index) => {
    if (block.info !== 'hex') return [];
    const next = blocks[index + 1];
    // The decoded form must follow in the same section, or it documents some other frame.
    const json = next?.info === 'json' && next.headings[1] === block.headings[1] ? next.body : undefined;
    return [
      {
        where: `${file}:${block.line}`,
        file,
        frameName: /^`(\w+)`$/.exec(block.headings[1] ?? '')?.[1],
        // Whitespace only groups the bytes for reading; the digits are the exact encoding.
        hex: block.body.replace(/\s+/g, ''),
        json,
      },
    ];
  });
}

const docFiles = readdirSync(repoPath('docs/protocol')).filter((file) => file.endsWith('.md'));
const examples = docFiles.flatMap(hexExamplesOf);

/** A decoded frame as the docs show it in JSON: bytes as arrays of numbers. */
function jsonValueOf(frame: unknown): unknown {
  return JSON.parse(
    JSON.stringify(frame, (_key, value) => (value instanceof Uint8Array ? [...value] : value)),
  );
}

describe('hex examples in docs/protocol', () => {
  it.each(examples)('$where decodes to its section’s frame and re-encodes byte for byte', (example) => {
    expect(example.hex).toMatch(/^(?:[0-9a-f]{2})+$/);
    const decoded = decodeFrame(Buffer.from(example.hex, 'hex'));
    if (!decoded.ok) throw new Error(`${example.where} does not decode: ${decoded.error.message}`);
    expect(example.frameName, `${example.where} is not under a ## \`<frame>\` heading`).toBeDefined();
    expect(decoded.frame.type).toBe(example.frameName);
    expect(Buffer.from(encodeFrame(decoded.frame)).toString('hex')).toBe(example.hex);
    expect(example.json, `${example.where} has no json block after it`).toBeDefined();
    expect(JSON.parse(example.json ?? 'null')).toEqual(jsonValueOf(decoded.frame));
  });

  it('frames.md has exactly one example per frame type, and none for unknown types', () => {
    const counts: Record<string, number> = {};
    for (const { frameName } of examples.filter((example) => example.file === 'frames.md')) {
      counts[String(frameName)] = (counts[String(frameName)] ?? 0) + 1;
    }
    expect(counts).toEqual(Object.fromEntries(FRAME_TYPES.map((type) => [type, 1])));
  });

  it('frames.md has one section per frame type', () => {
    const sections = [...readDoc('docs/protocol/frames.md').matchAll(/^## `(\w+)`\s*$/gm)].map(
      (match) => match[1],
    );
    expect(sections.sort()).toEqual([...FRAME_TYPES].sort());
  });
});

describe('the frame table of docs/protocol/README.md', () => {
  const rows = tableRows(readDoc('docs/protocol/README.md'), ['frame', 'sent by', 'answered by', 'purpose']);
  const listed = rows.map((cells) => {
    const link = /^\[`(\w+)`\]\(frames\.md#(\w+)\)$/.exec(cells[0] ?? '');
    if (!link?.[1] || cells.length !== 4) throw new Error(`malformed frame row: | ${cells.join(' | ')} |`);
    return { type: link[1], anchor: link[2], sentBy: cells[1] };
  });

  it('lists every frame type once, and nothing else', () => {
    expect(listed.map((row) => row.type).sort()).toEqual([...FRAME_TYPES].sort());
  });

  it('links each frame to its section of frames.md and names its sender', () => {
    for (const row of listed) {
      // GitHub's anchor for the heading `## \`changeInvisibleDuration\`` is its lower-cased text.
      expect(row.anchor, row.type).toBe(row.type.toLowerCase());
      expect(row.sentBy, row.type).toBe(CLIENT_FRAME_TYPES.includes(row.type) ? 'client' : 'broker');
    }
  });
});
