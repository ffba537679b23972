import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLmdbStore } from '../lmdb-store.js';
import { LAYOUT_V1_SAMPLE } from './layout-v1-sample.test-support.js';
import { dumpDataDir, loadDataDir, type RawDataDir } from './raw-data-dir.test-support.js';
import { asReadBack, readContents, writeContents } from './store-contents.test-support.js';

/**
 * The bytes of layout 1: every entry of every database (shared structures included) after the
 * broker of the time wrote {@link LAYOUT_V1_SAMPLE} into an empty directory, as
 * {@link dumpDataDir} lists them. It was made before stored records had a schema of their own, so
 * it is the format data directories already hold. Never regenerate it to make a test
 * pass: a difference means a broker would write or read existing data directories differently,
 * which needs a new layout version and a migration (see lmdb-store.ts).
 */
const GOLDEN_PATH = new URL('./layout-v1.golden.json', import.meta.url);

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-layout-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function golden(): RawDataDir {
  return JSON.parse(readFileSync(GOLDEN_PATH, 'utf8')) as RawDataDir;
}

describe('layout 1 on disk', () => {
  it('writes the sample byte for byte as the golden data directory holds it', async () => {
    const store = openLmdbStore({ path: dir });
    await writeContents(store, LAYOUT_V1_SAMPLE);
    await store.close();
    const written = await dumpDataDir(dir);
    expect(written).toEqual(golden());
  });

  it('reads the golden data directory back as the sample', async () => {
    await loadDataDir(dir, golden());
    const store = openLmdbStore({ path: dir });
    try {
      expect(readContents(store)).toStrictEqual(asReadBack(LAYOUT_V1_SAMPLE));
    } finally {
      await store.close();
    }
  });
});
