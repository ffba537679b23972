import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pack } from 'msgpackr';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LAYOUT_VERSION } from '../layout-version.js';
import { openLmdbStore } from '../lmdb-store.js';
import type { StoredMessage } from '../records.js';
import { LAYOUT_V1_SAMPLE } from './layout-v1-sample.test-support.js';
import { dumpDataDir, loadDataDir, type RawDataDir } from './raw-data-dir.test-support.js';
import { asReadBack, readContents } from './store-contents.test-support.js';

/**
 * A broker of layout 2 opens and serves a layout 1 directory (layout-version.ts). The bytes of
 * layout 1: every entry of every database (shared structures included) after the
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

describe('a layout 1 data directory', () => {
  it('is opened by writing its new layout version and nothing else', async () => {
    await loadDataDir(dir, golden());
    await openLmdbStore({ path: dir }).close();
    const upgraded = golden();
    const layoutKey = toHex('layoutVersion');
    const meta = upgraded.meta?.map(
      ([key, value]) => [key, key === layoutKey ? toHex(pack(LAYOUT_VERSION)) : value] as const,
    );
    expect(await dumpDataDir(dir)).toEqual({ ...upgraded, meta });
  });

  it('reads back as the sample', async () => {
    await loadDataDir(dir, golden());
    const store = openLmdbStore({ path: dir });
    try {
      expect(readContents(store)).toStrictEqual(asReadBack(LAYOUT_V1_SAMPLE));
    } finally {
      await store.close();
    }
  });

  it('reads its messages beside the ones written after the upgrade, in one range', async () => {
    await loadDataDir(dir, golden());
    const store = openLmdbStore({ path: dir });
    const next: StoredMessage = {
      messageId: 'm-orders-3',
      topic: 'orders',
      offset: 3,
      tag: 'paid',
      body: new TextEncoder().encode('{"orderId":9}'),
      bornAt: 1_700_000_000_100,
      storedAt: 1_700_000_000_101,
    };
    try {
      await store.appendMessage(next);
      const read = store
        .readMessages('orders', 0, 10)
        .map((message) => ({ ...message, body: new Uint8Array(message.body) }));
      const before = LAYOUT_V1_SAMPLE.messages.filter((message) => message.topic === 'orders');
      expect(read).toStrictEqual([...before, next]);
    } finally {
      await store.close();
    }
  });
});

function toHex(value: string | Uint8Array): string {
  return Buffer.from(value).toString('hex');
}
