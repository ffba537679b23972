import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLmdbStore } from '../lmdb-store.js';
import { LAYOUT_V1_SAMPLE } from './layout-v1-sample.test-support.js';
import { dumpDataDir, loadDataDir, type RawDataDir } from './raw-data-dir.test-support.js';
import { asReadBack, readContents, writeContents } from './store-contents.test-support.js';

/**
 * The bytes layout 2 changed: the `meta` and `messages` databases after the broker wrote
 * {@link LAYOUT_V1_SAMPLE} into an empty directory. Every other database is written byte for byte
 * as layout 1's golden directory holds it. Never regenerate it to make a test pass: a difference
 * means a broker would write or read existing data directories differently, which needs a new
 * layout version (see layout-version.ts).
 */
const GOLDEN_V2_PATH = new URL('./layout-v2.golden.json', import.meta.url);
const GOLDEN_V1_PATH = new URL('./layout-v1.golden.json', import.meta.url);

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-layout-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Layout 2's golden directory: layout 1's, with the databases layout 2 changed replaced. */
function golden(): RawDataDir {
  const v1 = JSON.parse(readFileSync(GOLDEN_V1_PATH, 'utf8')) as RawDataDir;
  const changed = JSON.parse(readFileSync(GOLDEN_V2_PATH, 'utf8')) as RawDataDir;
  return { ...v1, ...changed };
}

describe('layout 2 on disk', () => {
  it('writes the sample byte for byte as the golden data directory holds it', async () => {
    const store = openLmdbStore({ path: dir });
    await writeContents(store, LAYOUT_V1_SAMPLE);
    await store.close();
    expect(await dumpDataDir(dir)).toEqual(golden());
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
